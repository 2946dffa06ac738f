/**
 * Issue 11 attacks 2 and 4 and issue 12 item 12 on the ssh backend, through the real CLI: the
 * remote side is the test host's unprivileged user (yonder-test), and the attacker another
 * user of the same machine (the host is this machine, on loopback). A remote work directory
 * another user could change is refused on the target before anything is made there; the race
 * for it leaves nothing in the attacker's hands; `--env d=…` moves nothing; a record naming pid
 * 1 signals nothing; cancel stops every process of the job; a stopped wrapper is seen.
 */
import { execFileSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  asUser,
  attackerPlace,
  cleanupUsers,
  labGroup,
  lookUp,
  markedProcesses,
  onCleanup,
  requireCliBuild,
  requireSshHosts,
  requireUsers,
  rootDir,
  runCli,
  runCliJson,
  sshHostsEnv,
  startAsUser,
  startWorkdirAttack,
  type TestUser,
  unsignalled,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let attacker: TestUser;
/** The account jobs run as on the test host. */
let remote: TestUser;
const SECRET = `ssh-s3cret-${process.pid}-${Date.now()}`;

beforeAll(() => {
  requireCliBuild();
  requireSshHosts();
  ({ attacker } = requireUsers());
  remote = lookUp('yonder-test') as TestUser;
  if (!remote)
    throw new Error('The ssh test hosts’ user yonder-test is missing: scripts/sshd-hosts.sh start');
});
afterAll(() => cleanupUsers());

/** A fresh ledger with an ssh profile `box` on the test host (work directory `workdir`, when given). */
type Run = (args: readonly string[]) => ReturnType<typeof runCliJson>;

async function ledger(workdir?: string): Promise<{ state: string; run: Run }> {
  const state = mkdtempSync(join(tmpdir(), 'yonder-ssh-shared-'));
  onCleanup(() => execFileSync('rm', ['-rf', state]));
  const add = await runCli(
    [
      'profile',
      'add',
      'box',
      '--backend',
      'ssh',
      '--host',
      'target',
      '--ssh-config',
      sshHostsEnv().YONDER_SSH_CONFIG as string,
      '--cancel-grace',
      '1',
      ...(workdir === undefined ? [] : ['--workdir', workdir]),
    ],
    { state },
  );
  expect(add.code, add.stderr).toBe(0);
  const run: Run = (args) => runCliJson(args, { state, env: { TOKEN: SECRET } });
  return { state, run };
}

function submit(run: Run, argv: readonly string[]) {
  return run(['submit', '--profile', 'box', '--secret', 'TOKEN', '--', ...argv]);
}

/** A directory of the remote user's, for what their jobs write. */
function remoteDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `yonder-ssh-${prefix}-`));
  chownSync(dir, remote.uid, remote.gid);
  onCleanup(() => execFileSync('rm', ['-rf', dir]));
  return dir;
}

describe('a remote work directory another user could change is refused on the target', () => {
  it('below a group project directory, or where another user planted a link', async () => {
    const base = rootDir('ssh-shared', 0o1777);
    const project = join(base, 'project');
    mkdirSync(project);
    chownSync(project, remote.uid, attacker.gid);
    execFileSync('chmod', ['0775', project]);
    const grouped = await ledger(join(project, 'jobs'));
    const refused = await submit(grouped.run, ['true']);
    expect(refused.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(refused.doc.error.message).toContain(
      `${project} (owner yonder-test (uid ${remote.uid}), mode 0775) is writable by its group`,
    );
    expect(refused.doc.error.message).toContain(`Fix: chmod go-w ${project}`);
    expect(readdirSync(project)).toEqual([]);

    const pwned = join(base, 'pwned');
    const evil = attackerPlace(attacker, base, pwned);
    const link = join(base, 'work');
    asUser(attacker, ['ln', '-s', evil, link]);
    const planted = await ledger(link);
    const linked = await submit(planted.run, ['true']);
    expect(linked.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(linked.doc.error.message).toContain(
      `${link} (owner ${attacker.name} (uid ${attacker.uid}), mode 0777) is a symbolic link made by another user`,
    );
    expect(readdirSync(evil)).toEqual(['env.sh']);
    expect(existsSync(pwned)).toBe(false);
  });

  it('takes directories a group of the remote user’s own can write (umask 002), not one others are in', async () => {
    const base = rootDir('ssh-umask002', 0o755);
    const project = join(base, 'project');
    mkdirSync(project);
    chownSync(project, remote.uid, remote.gid);
    execFileSync('chmod', ['0775', project]);
    const { state, run } = await ledger(join(project, 'jobs'));
    const job = (await submit(run, ['sh', '-c', 'echo "ran as $(id -un)"'])).doc.result;
    expect(job.state).not.toBe('failed');
    const waited = await run(['wait', job.id, '--timeout', '60']);
    expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect((await runCli(['logs', job.id], { state })).stdout).toBe('ran as yonder-test\n');
    chownSync(project, remote.uid, labGroup());
    const refused = await submit(run, ['true']);
    expect(refused.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(refused.doc.error.message).toContain(
      `${project} (owner yonder-test (uid ${remote.uid}), mode 0775) is writable by its group`,
    );
  });

  it('racing the remote user for the work directory, 50 submits: nothing of theirs reaches the attacker', async () => {
    const attack = startWorkdirAttack(attacker, 'ssh-race', 1500);
    const { run } = await ledger(attack.workdir);
    const outcomes = { ran: 0, refused: 0 };
    for (let round = 1; round <= 50; round += 1) {
      attack.round(round);
      const result = await submit(run, ['sh', '-c', 'echo "mine $(id -un)"; exit 7']);
      if (result.code !== 0) {
        expect(result.doc.error.code, result.stdout).toBe('E_UNTRUSTED_PATH');
        outcomes.refused += 1;
        continue;
      }
      outcomes.ran += 1;
      const id = result.doc.result.id;
      const waited = await run(['wait', id, '--timeout', '30']);
      expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 7 });
      expect(String(waited.doc.result.jobs[0].data.jobDir)).toBe(join(attack.workdir, id));
    }
    const evidence = attack.evidence(SECRET);
    console.log(
      `work-directory race (ssh), 50 submits: ${outcomes.ran} ran in the remote user's own directory, ${outcomes.refused} refused; job directories swapped ${evidence.swaps.length}, secrets read ${Number(evidence.secretRead)}, attacker's env.sh run ${Number(evidence.envRun)}`,
    );
    expect(outcomes.ran + outcomes.refused).toBe(50);
    expect(evidence).toEqual({ swaps: [], secretRead: false, envRun: false });
  }, 400_000);
});

describe('the wrapper and the signals, on the target', () => {
  it('--env d=… moves nothing of the wrapper’s', async () => {
    const base = rootDir('ssh-env-d', 0o1777);
    const pwned = join(base, 'pwned');
    const evil = attackerPlace(attacker, base, pwned);
    const { run } = await ledger();
    const result = await run([
      'submit',
      '--profile',
      'box',
      '--secret',
      'TOKEN',
      '--env',
      `d=${evil}`,
      '--',
      'sh',
      '-c',
      'exit 3',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const waited = await run(['wait', result.doc.result.id, '--timeout', '30']);
    expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 3 });
    expect(readdirSync(evil)).toEqual(['env.sh']);
    expect(existsSync(pwned)).toBe(false);
  });

  it('a record naming pid 1 makes cancel, status and list signal nothing', async () => {
    const { state, run } = await ledger();
    const out = remoteDir('pid-one');
    const job = (await submit(run, ['sh', '-c', `echo $$ > ${out}/pid; sleep 300`])).doc.result;
    onCleanup(() => {
      for (const pid of markedProcesses(job.id)) process.kill(pid, 'SIGKILL');
    });
    await until(() => existsSync(join(out, 'pid')), 15_000, 'the job to start');
    const canaryFile = join(out, 'canary');
    startAsUser(remote, ['setsid', 'sh', '-c', 'echo $$ > "$0"; exec sleep 300', canaryFile]);
    await until(() => existsSync(canaryFile), 10_000, 'the canary to start');
    const canary = Number(readFileSync(canaryFile, 'utf8'));
    const path = join(state, 'jobs', job.id.slice(0, 2), `${job.id}.json`);
    const record = JSON.parse(readFileSync(path, 'utf8'));
    record.data.pid = 1;
    record.externalId = '1';
    writeFileSync(`${path}.edit`, `${JSON.stringify(record)}\n`);
    renameSync(`${path}.edit`, path);
    const cancel = await run(['cancel', job.id]);
    expect(cancel.doc.result[0].error).toMatchObject({ code: 'E_CORRUPT_RECORD' });
    expect((await run(['status', job.id])).doc.ok).toBe(true);
    expect((await run(['list'])).doc.ok).toBe(true);
    expect(unsignalled(canary)).toBe(true);
    expect(unsignalled(Number(readFileSync(join(out, 'pid'), 'utf8')))).toBe(true);
  });

  it('cancel stops what the job started in other sessions on the target, TERM-proof ones too', async () => {
    const { run } = await ledger();
    const out = remoteDir('whole');
    const job = (
      await submit(run, [
        'sh',
        '-c',
        `setsid sleep 300 & setsid sh -c 'trap "" TERM; touch ${out}/stubborn; while :; do sleep 1; done' & sleep 300`,
      ])
    ).doc.result;
    onCleanup(() => {
      for (const pid of markedProcesses(job.id)) process.kill(pid, 'SIGKILL');
    });
    await until(() => existsSync(join(out, 'stubborn')), 15_000, 'the job to start its processes');
    expect(markedProcesses(job.id).length).toBeGreaterThanOrEqual(5);
    const cancel = await run(['cancel', job.id]);
    expect(cancel.doc.result[0]).toMatchObject({ state: 'cancelled', error: null });
    expect(markedProcesses(job.id)).toEqual([]);
  });

  it('a job that stops its wrapper on the target is seen stopped, and its real exit kept', async () => {
    const { run } = await ledger();
    const out = remoteDir('stopped');
    const gate = join(out, 'go');
    const job = (
      await submit(run, [
        'sh',
        '-c',
        `kill -STOP $PPID; while [ ! -e ${gate} ]; do sleep 0.1; done; exit 3`,
      ])
    ).doc.result;
    onCleanup(() => {
      for (const pid of markedProcesses(job.id)) process.kill(pid, 'SIGKILL');
    });
    await until(
      async () => (await run(['status', job.id])).doc.result[0].nativeState === 'stopped',
      15_000,
      'the stopped wrapper to be seen',
    );
    writeFileSync(gate, '');
    const waited = await run(['wait', job.id, '--timeout', '30']);
    expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 3 });
    expect(Date.parse(waited.doc.result.jobs[0].finishedAt)).toBeGreaterThan(
      Date.parse(waited.doc.result.jobs[0].startedAt),
    );
  });
});
