/** The workstation backend on this machine: cancel stops every process of a job, survivors are reported, a stopped wrapper is seen, forged pids signal nothing, polls read the job's times and forget unused secrets. */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freezeProcess, markedProcesses, unsignalled, until } from '@yonder/test-helpers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readBootId, readProcessStat } from '../../process/process-identity.js';
import type {
  BackendContextV1,
  BackendJobV1,
  BackendV1,
  ObservationV1,
} from '../../spec/backend/v1/backend-v1.js';
import type { Profile } from '../../spec/profile.js';
import { createLocalTransport } from '../../transport/local-transport.js';
import { createLocalBackend } from '../local/local-backend.js';
import { TEST_PROFILE, testRequest } from './workstation-test-requests.js';

let scratch: string;
let context: BackendContextV1;
let backend: BackendV1;
const cleanups: Array<() => void | Promise<void>> = [];
const profile: Profile = TEST_PROFILE;

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-ws-cancel-'));
  context = { transport: createLocalTransport(), stateDirectory: scratch, options: {} };
  backend = createLocalBackend();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch {
      /* already gone */
    }
  }
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

/** Start a job; every process carrying its marker is killed after the test. */
async function start(argv: string[]): Promise<BackendJobV1> {
  const submitted = testRequest({ argv });
  const result = await backend.submit(submitted, context);
  cleanups.push(() => {
    for (const pid of markedProcesses(submitted.id)) process.kill(pid, 'SIGKILL');
  });
  return {
    options: {},
    id: submitted.id,
    name: 'test',
    externalId: result.externalId,
    state: 'running',
    createdAt: submitted.createdAt,
    cancelRequested: false,
    profile,
    data: result.data,
  };
}

async function observe(job: BackendJobV1): Promise<ObservationV1> {
  return (await backend.poll([job], context)).get(job.id) as ObservationV1;
}

function stateOf(observation: ObservationV1): string {
  return observation.kind === 'found' ? observation.state : observation.kind;
}

async function logHas(job: BackendJobV1, text: string): Promise<void> {
  await until(
    async () => (await backend.readLog(job, {}, context)).data.toString().includes(text),
    10_000,
    `the job to print ${text}`,
  );
}

/** Freeze `pid` (cgroup v1 freezer): SIGKILL waits until it is thawed. */
function freeze(pid: number): () => void {
  const frozen = freezeProcess(pid);
  cleanups.push(() => frozen.remove());
  return () => frozen.thaw();
}

describe('cancel stops the whole job', () => {
  it('reaches what the job started in its own session: TERM, then KILL for what ignores TERM; the job is over only when all are gone', async () => {
    const job = await start([
      'sh',
      '-c',
      'setsid sleep 300 & setsid sh -c \'trap "" TERM; echo stubborn; while :; do sleep 1; done\' & sleep 300',
    ]);
    await logHas(job, 'stubborn');
    expect(markedProcesses(job.id).length).toBeGreaterThanOrEqual(5);
    const asked = { ...job, cancelRequested: true };
    expect((await backend.cancel([asked], context, { force: false })).get(job.id)).toEqual({
      kind: 'sent',
    });
    // The wrapper recorded the job's end, but a process of the job still runs: not over.
    await until(
      async () => {
        const seen = await observe(asked);
        return seen.kind === 'found' && seen.nativeState === 'ended (exit 143), processes left';
      },
      10_000,
      'the wrapper to end with a process left',
    );
    const left = await observe(asked);
    expect(left).toMatchObject({ kind: 'found', state: 'running' });
    expect(markedProcesses(job.id).length).toBeGreaterThanOrEqual(1);
    expect((await backend.cancel([asked], context, { force: true })).get(job.id)).toEqual({
      kind: 'sent',
    });
    expect(markedProcesses(job.id)).toEqual([]);
    expect(await observe(asked)).toMatchObject({
      kind: 'found',
      state: 'failed',
      exitCode: 143,
      signal: null,
      reason: 'exit code 143 (or killed by SIGTERM)',
    });
  });

  it('reports processes that survive SIGKILL, and never calls the job over while they run', async () => {
    const job = await start([
      'sh',
      '-c',
      'setsid sh -c \'echo $$ > "$YONDER_JOB_DIR/frozen.pid"; exec sleep 300\' & echo started; sleep 300',
    ]);
    await logHas(job, 'started');
    const pidFile = join(String(job.data.jobDir), 'frozen.pid');
    await until(() => existsSync(pidFile), 10_000, 'the grandchild to start');
    const frozen = Number(readFileSync(pidFile, 'utf8'));
    const thaw = freeze(frozen);
    const asked = { ...job, cancelRequested: true };
    const outcome = (await backend.cancel([asked], context, { force: true })).get(job.id);
    expect(outcome).toEqual({
      kind: 'failed',
      error: {
        code: 'E_CANCEL_FAILED',
        message: `1 process of the job survived SIGKILL (pid ${frozen}): they are still running (a process in uninterruptible sleep, or frozen); the job is not over until they end.`,
      },
    });
    await until(
      () => existsSync(join(String(job.data.jobDir), 'exit-code')),
      10_000,
      'the wrapper to record the end of its own process',
    );
    // Not over, and said so: the job keeps its state, the survivors stay its error.
    expect(await observe(asked)).toEqual({
      kind: 'query-failed',
      source: 'process',
      error: outcome?.kind === 'failed' ? outcome.error : null,
    });
    thaw();
    await until(
      () => markedProcesses(job.id).length === 0,
      10_000,
      'the frozen process to die once thawed',
    );
    expect(await observe(asked)).toMatchObject({ kind: 'found', state: 'failed', exitCode: 137 });
  });

  it('a job that stops its wrapper is seen stopped, and its real exit is recorded when it ends', async () => {
    const gate = join(scratch, 'go');
    const job = await start([
      'sh',
      '-c',
      `kill -STOP $PPID; while [ ! -e ${gate} ]; do sleep 0.1; done; exit 3`,
    ]);
    await until(
      () => readProcessStat(Number(job.data.pid))?.state === 'T',
      10_000,
      'the wrapper to be stopped',
    );
    expect(await observe(job)).toMatchObject({
      kind: 'found',
      state: 'running',
      nativeState: 'stopped',
      reason: expect.stringContaining(`the job's wrapper (pid ${job.data.pid}) is stopped`),
    });
    writeFileSync(gate, '');
    await until(
      async () => stateOf(await observe(job)) === 'failed',
      10_000,
      'the end to be recorded',
    );
    const seen = await observe(job);
    expect(seen).toMatchObject({ kind: 'found', state: 'failed', exitCode: 3 });
    expect(seen.kind === 'found' && seen.endedAt).toBeTruthy();
  });
});

describe('a cancel that reaches only the wrapper', () => {
  it('after the job has run is "not running": the job ended on its own, and its own end is kept', async () => {
    // The job stops its wrapper and exits 0 at once: the wrapper is left, about to record it.
    const job = await start(['sh', '-c', 'kill -STOP $PPID']);
    await until(
      () => readProcessStat(Number(job.data.pid))?.state === 'T',
      10_000,
      'the wrapper to be stopped',
    );
    await until(
      () => markedProcesses(job.id).every((pid) => pid === Number(job.data.pid)),
      10_000,
      'the job to exit, leaving its wrapper',
    );
    const outcome = await backend.cancel([{ ...job, cancelRequested: true }], context, {
      force: false,
    });
    expect(outcome.get(job.id)).toEqual({ kind: 'not-running' });
    process.kill(Number(job.data.pid), 'SIGCONT');
    await until(
      async () => stateOf(await observe(job)) === 'succeeded',
      10_000,
      'the end to be recorded',
    );
  });
});

describe('only a verified job is signalled', () => {
  it('a record naming pid 1, 0, -1 or a group not led by the job signals nothing', async () => {
    const canary: ChildProcess = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    cleanups.push(() => {
      canary.kill('SIGKILL');
    });
    const pid = canary.pid as number;
    const live = readProcessStat(pid)?.startTime as string;
    const forged = (id: string, data: BackendJobV1['data']): BackendJobV1 => ({
      options: {},
      id,
      name: 'forged',
      externalId: String(data.pid),
      state: 'running',
      createdAt: new Date().toISOString(),
      cancelRequested: true,
      profile,
      data: { jobDir: scratch, bootId: readBootId(), startTime: live, ...data },
    });
    const jobs = [
      forged('aaaaaaaaaaa1', { pid: 1 }),
      forged('aaaaaaaaaaa2', { pid: 0 }),
      forged('aaaaaaaaaaa3', { pid: -1 }),
      forged('aaaaaaaaaaa4', { pid: 1.5 }),
      forged('aaaaaaaaaaa5', { pid, startTime: '1' }),
    ];
    for (const force of [false, true]) {
      const outcomes = await backend.cancel(jobs, context, { force });
      for (const job of jobs.slice(0, 4))
        expect(outcomes.get(job.id)).toMatchObject({
          kind: 'failed',
          error: {
            code: 'E_CORRUPT_RECORD',
            message: expect.stringContaining('nothing was signalled'),
          },
        });
      expect(outcomes.get('aaaaaaaaaaa5')).toEqual({ kind: 'not-running' });
    }
    const observed = await backend.poll(jobs, context);
    for (const job of jobs.slice(0, 4))
      expect(observed.get(job.id)).toMatchObject({
        kind: 'query-failed',
        error: { code: 'E_CORRUPT_RECORD' },
      });
    expect(unsignalled(pid)).toBe(true);
    expect(unsignalled(process.pid)).toBe(true);
  });

  it('a process of another user carrying the job’s marker is not the job: root’s cancel leaves it alone', async () => {
    // Only root can signal another user's process; as anyone else this holds trivially.
    const job = await start(['sleep', '60']);
    const stranger = spawn(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', 'sleep', '60'],
      { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, YONDER_JOB_ID: job.id } },
    );
    cleanups.push(() => {
      process.kill(-(stranger.pid as number), 'SIGKILL');
    });
    await until(
      () => markedProcesses(job.id).includes(stranger.pid as number),
      5_000,
      'the stranger carrying the marker',
    );
    const outcome = (await backend.cancel([job], context, { force: false })).get(job.id);
    expect(outcome?.kind).toBe('sent');
    await until(
      () => markedProcesses(job.id).every((p) => p === stranger.pid),
      10_000,
      'the job gone',
    );
    expect(unsignalled(stranger.pid as number)).toBe(true);
  });
});

describe('what a poll reads and removes', () => {
  it('the secrets file of a job that never started is deleted by the next poll', async () => {
    const jobDir = join(scratch, 'runs', 'bbbbbbbbbbbb');
    mkdirSync(jobDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(jobDir, 'secrets.sh'), "export TOKEN='x'\n", { mode: 0o600 });
    const never: BackendJobV1 = {
      options: {},
      id: 'bbbbbbbbbbbb',
      name: 'never',
      externalId: '999999',
      state: 'running',
      createdAt: new Date().toISOString(),
      cancelRequested: true,
      profile,
      data: { jobDir, pid: 999_999, startTime: '1', bootId: readBootId() },
    };
    expect(await observe(never)).toMatchObject({ kind: 'absent' });
    expect(readdirSync(jobDir)).toEqual([]);
  });

  it('a cancel of a job that no longer runs deletes its secrets file, and says so', async () => {
    const jobDir = join(scratch, 'runs', 'cccccccccccc');
    mkdirSync(jobDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(jobDir, 'secrets.sh'), "export TOKEN='x'\n", { mode: 0o600 });
    const gone: BackendJobV1 = {
      id: 'cccccccccccc',
      name: 'gone',
      externalId: '999999',
      state: 'running',
      createdAt: new Date().toISOString(),
      cancelRequested: true,
      profile,
      options: {},
      data: { jobDir, pid: 999_999, startTime: '1', bootId: readBootId() },
    };
    expect((await backend.cancel([gone], context, { force: false })).get(gone.id)).toEqual({
      kind: 'not-running',
    });
    expect(readdirSync(jobDir)).toEqual([]);
  });

  it('a running job and a finished one carry the job’s own start (and end)', async () => {
    const job = await start(['sh', '-c', 'echo up; sleep 1']);
    await logHas(job, 'up');
    const running = await observe(job);
    expect(running).toMatchObject({ kind: 'found', state: 'running' });
    const startedAt = running.kind === 'found' ? running.startedAt : undefined;
    expect(Math.abs(Date.parse(startedAt as string) - Date.now())).toBeLessThan(10_000);
    await until(async () => stateOf(await observe(job)) === 'succeeded', 10_000, 'the job to end');
    const ended = await observe(job);
    expect(ended).toMatchObject({ kind: 'found', state: 'succeeded', startedAt });
    const endedAt = ended.kind === 'found' ? (ended.endedAt as string) : '';
    expect(Date.parse(endedAt) - Date.parse(startedAt as string)).toBeGreaterThanOrEqual(900);
  });
});
