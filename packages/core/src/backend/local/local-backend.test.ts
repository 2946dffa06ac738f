import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until, untilJobGone } from '@yonder/test-helpers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobManager } from '../../manager/job-manager.js';
import { isProcessAlive, readProcessIdentity } from '../../process/process-identity.js';
import { createRegistry } from '../../registry/registry.js';
import type { BackendJobV1 } from '../../spec/backend/v1/backend-v1.js';
import { createMemoryStore } from '../../store/memory-store.js';
import { createLocalTransport } from '../../transport/local-transport.js';
import { testRequest } from '../workstation/workstation-test-requests.js';
import { createLocalBackend } from './local-backend.js';

let scratch: string;
let manager: JobManager;

beforeEach(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-local-'));
  const registry = createRegistry({
    backends: [createLocalBackend()],
    transports: { local: () => createLocalTransport() },
  });
  manager = new JobManager({
    store: createMemoryStore(),
    registry,
    stateDirectory: scratch,
    minPollIntervalMs: 0,
  });
});

afterEach(async () => {
  await manager.close();
  // A job a test left running may still write its last files meanwhile: rm retries ENOTEMPTY.
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe('local backend', () => {
  it('keeps the job directory private and files exclusive', async () => {
    const job = await manager.submit({
      argv: ['cat', '{settings}'],
      settings: { a: 1 },
      secrets: { TOKEN: 'x' },
    });
    const dir = String(job.data.jobDir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'settings.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'job.log')).mode & 0o777).toBe(0o600);
    await manager.wait([job.id], { timeoutMs: 10_000 });
    expect(existsSync(join(dir, 'secrets.sh'))).toBe(false);
    expect(readFileSync(join(dir, 'exit-code'), 'utf8')).toBe('0\n');
  });

  it('never reuses an existing job directory', async () => {
    const backend = createLocalBackend();
    const request = testRequest({ id: 'aaaaaaaaaaaa', marker: 'yonder:aaaaaaaaaaaa' });
    const context = { transport: createLocalTransport(), options: {}, stateDirectory: scratch };
    const first = await backend.submit(request, context);
    await expect(backend.submit(request, context)).rejects.toMatchObject({
      code: 'E_SUBMIT_FAILED',
    });
    // Until its wrapper has recorded the end, the first job still writes there (ci22: the
    // clean-up after the test met a file written meanwhile, ENOTEMPTY).
    await until(
      () => existsSync(join(String(first.data.jobDir), 'exit-code')),
      10_000,
      'the first job to finish',
    );
  });

  it('runs the job detached: it outlives the process that submitted it', async () => {
    // A separate node process submits through the built package, then exits.
    const cli = join(scratch, 'submit.mjs');
    const core = new URL('../../../dist/index.js', import.meta.url).pathname;
    writeFileSync(
      cli,
      `import { createLocalBackend, createLocalTransport } from ${JSON.stringify(core)};
const result = await createLocalBackend().submit({ id: 'bbbbbbbbbbbb', name: 'd', marker: 'm', createdAt: '2026-01-01T00:00:00Z', argv: ['sh', '-c', 'sleep 1; echo survived'], env: {}, secrets: {}, resources: {}, schedulerOptions: [], profile: { name: 'local', backend: 'local' } }, { transport: createLocalTransport(), options: {}, stateDirectory: ${JSON.stringify(scratch)} });
process.stdout.write(JSON.stringify(result.data));`,
    );
    const child = spawnSync(process.execPath, [cli], { encoding: 'utf8', timeout: 20_000 });
    expect(child.status, child.stderr).toBe(0);
    const data = JSON.parse(child.stdout) as {
      jobDir: string;
      pid: number;
      startTime: string;
      bootId: string;
      host: string;
    };
    // The submitting process has exited; the job is still there and finishes on its own.
    await until(() => existsSync(join(data.jobDir, 'exit-code')), 10_000, 'the job to finish');
    expect(readFileSync(join(data.jobDir, 'exit-code'), 'utf8')).toBe('0\n');
    expect(readFileSync(join(data.jobDir, 'job.log'), 'utf8')).toBe('survived\n');
  });

  it('cancels with TERM, and with KILL after the grace period when TERM is ignored', async () => {
    const polite = await manager.submit({ argv: ['sleep', '300'] });
    const [first] = await manager.cancel([polite.id], { waitMs: 10_000 });
    expect(first?.state).toBe('cancelled');
    await untilJobGone(Number(polite.data.pid));

    const store = manager.store;
    const stubborn = await manager.submit({
      argv: ['sh', '-c', 'trap "" TERM; echo ready; while :; do sleep 1; done'],
    });
    await store.updateJob(stubborn.id, (job) => ({
      ...job,
      profileSnapshot: { ...job.profileSnapshot, cancelGraceSeconds: 1 },
    }));
    await until(
      async () => (await manager.logs(stubborn.id)).chunk.data.toString().includes('ready'),
      10_000,
      'the job to trap TERM',
    );
    const [second] = await manager.cancel([stubborn.id], { waitMs: 15_000 });
    expect(second?.state).toBe('cancelled');
    await untilJobGone(Number(stubborn.data.pid));
    // KILL spares the wrapper, which records how the job ended: by SIGKILL, after the grace.
    expect(second).toMatchObject({ exitCode: 137, signal: 'SIGKILL' });
    const pid = Number(second?.externalId);
    const identity = readProcessIdentity(pid);
    expect(
      identity !== null &&
        identity.startTime === stubborn.data.startTime &&
        isProcessAlive(identity),
    ).toBe(false);
  });

  it('never signals a recycled pid: a live process with another start time is not the job', async () => {
    const victim = spawnSync('true');
    expect(victim.status).toBe(0);
    const bystander = (await import('node:child_process')).spawn('sleep', ['30'], {
      detached: true,
      stdio: 'ignore',
    });
    const identity = readProcessIdentity(bystander.pid as number);
    expect(identity).not.toBeNull();
    const job: BackendJobV1 = {
      id: 'cccccccccccc',
      name: 'fake',
      externalId: String(bystander.pid),
      state: 'running',
      createdAt: new Date().toISOString(),
      cancelRequested: true,
      profile: { name: 'local', backend: 'local' },
      options: {},
      data: {
        ...identity!,
        startTime: String(Number(identity!.startTime) - 1),
        jobDir: scratch,
        log: join(scratch, 'none'),
      },
    };
    const backend = createLocalBackend();
    const context = { transport: createLocalTransport(), options: {}, stateDirectory: scratch };
    const outcome = await backend.cancel([job], context, { force: true });
    expect(outcome.get(job.id)).toEqual({ kind: 'not-running' });
    const observation = (await backend.poll([job], context)).get(job.id);
    expect(observation?.kind).toBe('absent');
    expect(isProcessAlive(identity!)).toBe(true);
    process.kill(bystander.pid as number, 'SIGKILL');
  });

  it('reports a job killed from outside by its exit status, naming the signal only as a possibility', async () => {
    const job = await manager.submit({
      argv: ['sh', '-c', 'echo $$ > pid; exec sleep 300'],
      cwd: scratch,
    });
    // The file exists before `echo` fills it: wait for the whole pid.
    const pidFile = join(scratch, 'pid');
    await until(
      () => existsSync(pidFile) && /^\d+\n$/.test(readFileSync(pidFile, 'utf8')),
      10_000,
      'the job to write its pid',
    );
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    const { jobs } = await manager.wait([job.id], { timeoutMs: 10_000 });
    // Its wrapper saw exit status 137, which an `exit 137` leaves too: no signal is claimed.
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      exitCode: 137,
      signal: null,
      reason: 'exit code 137 (or killed by SIGKILL)',
      failureKind: 'application',
    });
  });

  it('a job whose wrapper vanished without an exit code is lost after the bounded misses', async () => {
    const job = await manager.submit({ argv: ['sleep', '300'] });
    process.kill(-Number(job.externalId), 'SIGKILL');
    const { jobs } = await manager.wait([job.id], { timeoutMs: 15_000 });
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      reason: 'lost',
      failureKind: 'infrastructure',
    });
  });

  it('reads the tail of the log and follows it by offset; a deleted log is said to be gone', async () => {
    const job = await manager.submit({
      argv: ['sh', '-c', 'for i in 1 2 3 4 5; do echo line$i; done'],
    });
    await manager.wait([job.id], { timeoutMs: 10_000 });
    expect((await manager.logs(job.id, { lines: 2 })).chunk.data.toString()).toBe('line4\nline5\n');
    let text = '';
    await manager.follow(
      job.id,
      (chunk) => {
        text += chunk.data.toString();
      },
      { lines: 100 },
    );
    expect(text).toBe('line1\nline2\nline3\nline4\nline5\n');
    rmSync(String(job.data.log));
    const { chunk, result } = await manager.logs(job.id);
    expect(chunk.exists).toBe(false);
    expect(result.gone).toBe(true);
    expect(chunk.message).toBe(
      `job ${job.id} ran, but its log is gone (${job.data.log} does not exist).`,
    );
  });

  it('refuses resources it cannot honour, naming the field', async () => {
    await expect(manager.submit({ argv: ['true'], resources: { cpus: 4 } })).rejects.toMatchObject({
      code: 'E_INVALID_JOB_SPEC',
      message: expect.stringContaining('resources.cpus'),
    });
  });
});
