/**
 * Issue 11, attack 2 (work directories), on the local backend through the real CLI, run as an
 * unprivileged victim while an unprivileged attacker plays: a work directory another user can
 * write (a directory on the way without the sticky bit, a group project directory, a link
 * planted in /tmp, a race to make it first) is refused before anything is made, and the
 * attacker never gets to swap a job directory, source their env.sh, forge the exit code or read
 * `.payload`/`secrets.sh`; `--env d=…` moves nothing of the wrapper's; secrets are in no
 * environment but the job's.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  asUser,
  attackerPlace,
  cleanupUsers,
  labGroup,
  ownedDir,
  requireCliBuild,
  requireUsers,
  rootDir,
  startWorkdirAttack,
  type TestUser,
  until,
  yonderAs,
  yonderJsonAs,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;
const SECRET = `s3cret-${process.pid}-${Date.now()}`;

beforeAll(() => {
  requireCliBuild();
  ({ victim, attacker } = requireUsers());
});
afterAll(() => cleanupUsers());

/** The victim's ledger and a profile `w` whose work directory is `workdir`. */
async function ledger(prefix: string, workdir: string): Promise<string> {
  const state = join(ownedDir(victim, prefix), 'state');
  const added = await yonderAs(victim, state, [
    'profile',
    'add',
    'w',
    '--backend',
    'local',
    '--workdir',
    workdir,
  ]);
  expect(added.code, added.stderr).toBe(0);
  return state;
}

/** `yonder submit` through `w` with the secret TOKEN and `env` (default WHO=victim), of `argv`. */
function submitArgs(argv: string[], env = ['WHO=victim']): string[] {
  const variables = env.flatMap((assignment) => ['--env', assignment]);
  return ['submit', '--profile', 'w', '--secret', 'TOKEN', ...variables, '--', ...argv];
}

describe('a work directory another user could change is refused before anything is made', () => {
  it('below a directory others may write without the sticky bit, or a group project directory', async () => {
    const base = rootDir('shared', 0o755);
    const open = join(base, 'open');
    mkdirSync(open, { mode: 0o777 });
    execFileSync('chmod', ['0777', open]);
    const project = join(base, 'project');
    mkdirSync(project);
    chownSync(project, victim.uid, attacker.gid);
    execFileSync('chmod', ['0775', project]);
    for (const [parent, problem] of [
      [open, `${open} (owner root (uid 0), mode 0777) is writable by its group and others`],
      [
        project,
        `${project} (owner ${victim.name} (uid ${victim.uid}), mode 0775) is writable by its group`,
      ],
    ] as const) {
      const workdir = join(parent, 'jobs');
      const state = await ledger('open-parent', workdir);
      const submit = await yonderJsonAs(victim, state, submitArgs(['true']), { TOKEN: SECRET });
      expect(submit.code).toBe(1);
      expect(submit.doc.error.code).toBe('E_UNTRUSTED_PATH');
      expect(submit.doc.error.message).toContain(
        `Refusing the work directory ${workdir}: ${problem}`,
      );
      expect(submit.doc.error.message).toContain(`Fix: chmod go-w ${parent}`);
      expect(submit.stdout + submit.stderr).not.toContain(SECRET);
      expect(readdirSync(parent)).toEqual([]);
      const listed = await yonderJsonAs(victim, state, ['list', '--all']);
      expect(listed.doc.result.map((job: { state: string }) => job.state)).toEqual(['failed']);
      const check = await yonderJsonAs(victim, state, ['profile', 'check', 'w']);
      expect(JSON.stringify(check.doc)).toContain(`chmod go-w ${parent}`);
    }
  });

  it('a link another user planted in /tmp where the work directory should be', async () => {
    const base = rootDir('planted', 0o1777);
    const pwned = join(base, 'pwned');
    const evil = attackerPlace(attacker, base, pwned);
    const workdir = join(base, 'work');
    asUser(attacker, ['ln', '-s', evil, workdir]);
    const state = await ledger('planted', workdir);
    const submit = await yonderJsonAs(victim, state, submitArgs(['true']), { TOKEN: SECRET });
    expect(submit.doc.error).toMatchObject({
      code: 'E_UNTRUSTED_PATH',
      message: `Refusing the work directory ${workdir}: ${workdir} (owner ${attacker.name} (uid ${attacker.uid}), mode 0777) is a symbolic link made by another user, so another user could change what yonder reads or runs there. Fix: remove it (rm ${workdir}) and use a path of your own.`,
    });
    expect(readdirSync(evil)).toEqual(['env.sh']);
    expect(existsSync(pwned)).toBe(false);
  });
});

describe('directories a group of the victim’s own can write (umask 002), as Debian’s sshd takes them', () => {
  it('are the victim’s: the config, the ledger and the work directory work there; a group the attacker is in does not', async () => {
    // As `umask 002` and a group per user leave them: mode 0775 directories, a 0664 config.
    const base = ownedDir(victim, 'umask002', 0o775);
    const config = join(base, 'config', 'yonder');
    asUser(victim, [
      'sh',
      '-c',
      'umask 002 && mkdir -p "$1" "$2" && printf "{}\\n" > "$1/config.json"',
      'sh',
      config,
      join(base, 'project'),
    ]);
    const env = { XDG_CONFIG_HOME: join(base, 'config') };
    const state = join(base, 'state');
    const workdir = join(base, 'project', 'runs');
    const added = await yonderAs(
      victim,
      state,
      ['profile', 'add', 'w', '--backend', 'local', '--workdir', workdir],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    const submit = await yonderJsonAs(
      victim,
      state,
      submitArgs(['sh', '-c', 'echo "ran $WHO"; exit 3']),
      { ...env, TOKEN: SECRET },
    );
    expect(submit.code, submit.stdout).toBe(0);
    const id = submit.doc.result.id as string;
    const waited = await yonderJsonAs(victim, state, ['wait', id, '--timeout', '30'], env);
    expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 3 });
    const log = await yonderAs(victim, state, ['logs', id], env);
    expect(log.stdout).toBe('ran victim\n');
    expect(
      execFileSync('stat', ['-c', '%a', base, config, join(config, 'config.json')], {
        encoding: 'utf8',
      }),
    ).toBe('775\n775\n664\n');

    // The same directory in a group the attacker is in: theirs to write, so refused.
    chownSync(join(base, 'project'), victim.uid, labGroup());
    const refused = await yonderJsonAs(victim, state, submitArgs(['true']), {
      ...env,
      TOKEN: SECRET,
    });
    expect(refused.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(refused.doc.error.message).toContain(
      `${join(base, 'project')} (owner ${victim.name} (uid ${victim.uid}), mode 0775) is writable by its group`,
    );
    chownSync(join(config, 'config.json'), victim.uid, labGroup());
    const listed = await yonderJsonAs(victim, state, ['plugins'], env);
    expect(listed.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(listed.doc.error.message).toContain(
      `Refusing the yonder config ${join(config, 'config.json')}`,
    );
  });
});

describe('racing the victim for the work directory (50 submits)', () => {
  it('the attacker makes the directory first, or the victim does: never a job of theirs in the attacker’s hands', async () => {
    const attack = startWorkdirAttack(attacker, 'race', 600);
    const state = await ledger('race', attack.workdir);
    const outcomes = { ran: 0, refused: 0 };
    for (let round = 1; round <= 50; round += 1) {
      attack.round(round);
      const submit = await yonderJsonAs(
        victim,
        state,
        submitArgs(['sh', '-c', 'echo "mine $WHO"; exit 7']),
        { TOKEN: SECRET },
      );
      if (submit.code !== 0) {
        expect(submit.doc.error.code, submit.stdout).toBe('E_UNTRUSTED_PATH');
        outcomes.refused += 1;
        continue;
      }
      outcomes.ran += 1;
      const id = submit.doc.result.id;
      const waited = await yonderJsonAs(victim, state, ['wait', id, '--timeout', '30']);
      expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 7 });
      expect((await yonderAs(victim, state, ['logs', id])).stdout).toBe('mine victim\n');
      expect(String(waited.doc.result.jobs[0].data.jobDir)).toBe(join(attack.workdir, id));
    }
    const evidence = attack.evidence(SECRET);
    console.log(
      `work-directory race (local), 50 submits: ${outcomes.ran} ran in the victim's own directory, ${outcomes.refused} refused (the attacker's link or directory was there first); job directories swapped ${evidence.swaps.length}, secrets read ${Number(evidence.secretRead)}, attacker's env.sh run ${Number(evidence.envRun)}`,
    );
    expect(outcomes.ran + outcomes.refused).toBe(50);
    expect(evidence).toEqual({ swaps: [], secretRead: false, envRun: false });
  }, 300_000);
});

describe('the wrapper’s own variables and the secrets', () => {
  it('--env d=… (a directory the attacker prepared) moves neither where it reads secrets nor where it writes its exit code', async () => {
    const base = rootDir('env-d', 0o1777);
    const pwned = join(base, 'pwned');
    const evil = attackerPlace(attacker, base, pwned);
    asUser(attacker, [
      'sh',
      '-c',
      `printf "export TOKEN='forged'\\n" > "$1/secrets.sh"`,
      'x',
      evil,
    ]);
    const state = await ledger('env-d', join(ownedDir(victim, 'env-d-work'), 'runs'));
    const submit = await yonderJsonAs(
      victim,
      state,
      submitArgs(
        ['sh', '-c', 'echo "d=$d"; [ "$TOKEN" = "$1" ] && echo token-ok; exit 3', 'job', SECRET],
        [`d=${evil}`, 'code=0'],
      ),
      { TOKEN: SECRET },
    );
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.doc.result.id;
    const waited = await yonderJsonAs(victim, state, ['wait', id, '--timeout', '30']);
    expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 3 });
    expect((await yonderAs(victim, state, ['logs', id])).stdout).toBe(`d=${evil}\ntoken-ok\n`);
    expect(readdirSync(evil).sort()).toEqual(['env.sh', 'secrets.sh']);
    expect(existsSync(pwned)).toBe(false);
  });

  it('a secret is in the job’s environment and not in its wrapper’s; its file is gone once read', async () => {
    const state = await ledger('environ', join(ownedDir(victim, 'environ-work'), 'runs'));
    const submit = await yonderJsonAs(
      victim,
      state,
      submitArgs(['sh', '-c', 'echo $$ > "$YONDER_JOB_DIR/pid"; sleep 30'], []),
      { TOKEN: SECRET },
    );
    expect(submit.code, submit.stderr).toBe(0);
    const job = submit.doc.result;
    const pidFile = join(job.data.jobDir, 'pid');
    await until(() => existsSync(pidFile), 10_000, 'the job to start');
    const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'latin1');
    expect(environ(Number(readFileSync(pidFile, 'utf8')))).toContain(`TOKEN=${SECRET}`);
    expect(environ(job.data.pid)).not.toContain(SECRET);
    expect(existsSync(join(job.data.jobDir, 'secrets.sh'))).toBe(false);
    const cancelled = await yonderJsonAs(victim, state, ['cancel', job.id]);
    expect(cancelled.doc.result[0].state).toBe('cancelled');
  });
});
