/**
 * Issue 11 attack 4 and issue 12 items 11 and 12, on the local backend through the real CLI run
 * as an unprivileged victim: a record naming pid 1 makes cancel, status and list signal
 * nothing; cancel stops every process the job started (its own session included) and reports
 * those that outlive SIGKILL instead of calling the job cancelled; a job that stops its
 * wrapper is seen stopped and its real exit is kept; times are the job's own.
 */
import { chownSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cleanupUsers,
  freezeProcess,
  markedProcesses,
  onCleanup,
  ownedDir,
  requireCliBuild,
  requireUsers,
  startAsUser,
  type TestUser,
  unsignalled,
  until,
  yonderAs,
  yonderJsonAs,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;

beforeAll(() => {
  requireCliBuild();
  ({ victim } = requireUsers());
});
afterAll(() => cleanupUsers());

/** The victim's ledger with a local profile `p` whose cancel grace is one second. */
async function ledger(prefix: string): Promise<string> {
  const state = join(ownedDir(victim, prefix), 'state');
  const added = await yonderAs(victim, state, [
    'profile',
    'add',
    'p',
    '--backend',
    'local',
    '--cancel-grace',
    '1',
  ]);
  expect(added.code, added.stderr).toBe(0);
  return state;
}

/** Submit `script` (sh -c) as the victim; its processes are killed after the tests. */
async function submit(state: string, script: string) {
  const result = await yonderJsonAs(victim, state, [
    'submit',
    '--profile',
    'p',
    '--',
    'sh',
    '-c',
    script,
  ]);
  expect(result.code, result.stderr).toBe(0);
  const job = result.doc.result;
  onCleanup(() => {
    for (const pid of markedProcesses(job.id)) process.kill(pid, 'SIGKILL');
  });
  return job;
}

function jobFile(state: string, id: string): string {
  return join(state, 'jobs', id.slice(0, 2), `${id}.json`);
}

describe('only a verified job is signalled', () => {
  it('a record naming pid 1 makes cancel, status and list send nothing to anyone', async () => {
    const state = await ledger('pid-one');
    const job = await submit(state, 'echo up; sleep 300');
    await until(
      async () => (await yonderAs(victim, state, ['logs', job.id])).stdout === 'up\n',
      10_000,
      'the job to start',
    );
    // Another process of the victim's, in its own process group: kill(-1) would reach it.
    const canaryFile = join(ownedDir(victim, 'canary'), 'pid');
    startAsUser(victim, ['setsid', 'sh', '-c', 'echo $$ > "$0"; exec sleep 300', canaryFile]);
    await until(() => existsSync(canaryFile), 10_000, 'the canary to start');
    const canaryPid = Number(readFileSync(canaryFile, 'utf8'));
    const path = jobFile(state, job.id);
    const record = JSON.parse(readFileSync(path, 'utf8'));
    record.data.pid = 1;
    record.externalId = '1';
    writeFileSync(`${path}.edit`, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    chownSync(`${path}.edit`, victim.uid, victim.gid);
    renameSync(`${path}.edit`, path);
    const cancel = await yonderJsonAs(victim, state, ['cancel', job.id]);
    const status = await yonderJsonAs(victim, state, ['status', job.id]);
    const list = await yonderJsonAs(victim, state, ['list']);
    expect(cancel.code).toBe(1);
    expect(cancel.doc.result[0].error).toMatchObject({
      code: 'E_CORRUPT_RECORD',
      message: expect.stringContaining("cannot be this job's: it is neither polled nor signalled"),
    });
    expect(status.doc.ok).toBe(true);
    expect(list.doc.ok).toBe(true);
    expect(unsignalled(canaryPid)).toBe(true);
    expect(unsignalled(job.data.pid)).toBe(true);
    expect(markedProcesses(job.id).every((pid) => unsignalled(pid))).toBe(true);
  });
});

describe('cancel stops the whole job', () => {
  it('what the job started in other sessions, TERM-proof ones included, is gone before the job reads cancelled', async () => {
    const state = await ledger('whole-job');
    const job = await submit(
      state,
      'setsid sleep 300 & setsid sh -c \'trap "" TERM; echo stubborn; while :; do sleep 1; done\' & sleep 300',
    );
    await until(
      async () => (await yonderAs(victim, state, ['logs', job.id])).stdout.includes('stubborn'),
      10_000,
      'the job to start its processes',
    );
    expect(markedProcesses(job.id).length).toBeGreaterThanOrEqual(5);
    const cancel = await yonderJsonAs(victim, state, ['cancel', job.id]);
    expect(cancel.doc.result[0]).toMatchObject({ state: 'cancelled', error: null });
    expect(markedProcesses(job.id)).toEqual([]);
  });

  it('a process that outlives SIGKILL is reported, and the job is not called cancelled until it is gone', async () => {
    const state = await ledger('survivor');
    const job = await submit(
      state,
      'setsid sh -c \'echo $$ > "$YONDER_JOB_DIR/frozen.pid"; exec sleep 300\' & sleep 300',
    );
    const pidFile = join(job.data.jobDir, 'frozen.pid');
    await until(() => existsSync(pidFile), 10_000, 'the grandchild to start');
    const frozenPid = Number(readFileSync(pidFile, 'utf8'));
    const frozen = freezeProcess(frozenPid);
    try {
      const cancel = await yonderJsonAs(victim, state, ['cancel', job.id]);
      expect(cancel.code).toBe(1);
      expect(cancel.doc.result[0]).toMatchObject({
        state: 'running',
        error: {
          code: 'E_CANCEL_FAILED',
          message: expect.stringContaining(
            `1 process of the job survived SIGKILL (pid ${frozenPid})`,
          ),
        },
      });
      frozen.thaw();
      await until(
        async () =>
          (await yonderJsonAs(victim, state, ['status', job.id])).doc.result[0].state ===
          'cancelled',
        15_000,
        'the job to be cancelled once its last process is gone',
      );
      expect(markedProcesses(job.id)).toEqual([]);
    } finally {
      await frozen.remove();
    }
  });
});

describe('the wrapper and the job’s own times', () => {
  it('a job that stops its wrapper reads running (stopped), then its real exit', async () => {
    const state = await ledger('stopped');
    const gate = join(ownedDir(victim, 'stopped-gate'), 'go');
    const job = await submit(
      state,
      `kill -STOP $PPID; while [ ! -e ${gate} ]; do sleep 0.1; done; exit 3`,
    );
    await until(
      async () =>
        (await yonderJsonAs(victim, state, ['status', job.id])).doc.result[0].nativeState ===
        'stopped',
      10_000,
      'the stopped wrapper to be seen',
    );
    const seen = (await yonderAs(victim, state, ['status', job.id])).stdout;
    expect(seen).toContain('State:        running (stopped)');
    writeFileSync(gate, '');
    const waited = await yonderJsonAs(victim, state, ['wait', job.id, '--timeout', '30']);
    expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 3 });
  });

  it('startedAt and finishedAt are when the job ran, whenever yonder looked', async () => {
    const state = await ledger('times');
    const job = await submit(state, 'sleep 1');
    await until(() => existsSync(join(job.data.jobDir, 'exit-code')), 10_000, 'the job to end');
    // yonder looks a while after the end: the end it reports is still the job's own.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const status = await yonderJsonAs(victim, state, ['status', job.id]);
    const { startedAt, finishedAt, noticedAt } = status.doc.result[0];
    expect(Date.parse(finishedAt) - Date.parse(startedAt)).toBeGreaterThanOrEqual(950);
    expect(Date.parse(noticedAt) - Date.parse(finishedAt)).toBeGreaterThanOrEqual(1400);
    expect((await yonderAs(victim, state, ['status', job.id])).stdout).toMatch(
      /Duration: +1\.\ds\n/,
    );
  });
});
