/** The true end wins on the workstation backend (issue 12): a job that ended before a late cancel keeps its real outcome; one the cancel stopped is cancelled. Real local processes. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '@yonder/test-helpers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../backend/local/local-backend.js';
import { createRegistry } from '../registry/registry.js';
import { createMemoryStore } from '../store/memory-store.js';
import { JobManager } from './job-manager.js';

let scratch: string;
let manager: JobManager;

beforeEach(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-true-end-'));
  manager = new JobManager({
    store: createMemoryStore(),
    registry: createRegistry({ backends: [createLocalBackend()] }),
    stateDirectory: scratch,
    minPollIntervalMs: 0,
  });
  await manager.saveProfile({ name: 'here', backend: 'local', workdir: join(scratch, 'jobs') });
});

afterEach(() => rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));

/** Wait, without asking the manager (so the ledger still says running), for the wrapper's exit code. */
async function untilExitRecorded(jobDir: string): Promise<void> {
  await until(() => existsSync(join(jobDir, 'exit-code')), 30_000, 'the wrapper records the end');
}

describe('a cancel that arrives after the job ended', () => {
  it('leaves a job that exited 0 succeeded, with its own end time', async () => {
    const job = await manager.submit({ argv: ['sh', '-c', 'echo done'] }, { profile: 'here' });
    await untilExitRecorded(String(job.data.jobDir));
    expect((await manager.store.getJob(job.id))?.state).toBe('running');
    const [after] = await manager.cancel([job.id], { waitMs: 15_000 });
    expect(after).toMatchObject({ state: 'succeeded', exitCode: 0, failureKind: null });
    expect(after?.cancel).toMatchObject({ reason: 'user', reachedAt: null });
    // The job's own end, recorded by its wrapper, came before the cancel was asked for.
    expect(Date.parse(after?.finishedAt as string)).toBeLessThan(
      Date.parse(after?.cancel?.requestedAt as string),
    );
    expect(after?.history.at(-1)).toMatchObject({ to: 'succeeded', source: 'exit-code-file' });
  });

  it('leaves a job that failed by itself failed, with its exit code', async () => {
    const job = await manager.submit({ argv: ['sh', '-c', 'exit 3'] }, { profile: 'here' });
    await untilExitRecorded(String(job.data.jobDir));
    const [after] = await manager.cancel([job.id], { waitMs: 15_000 });
    expect(after).toMatchObject({ state: 'failed', exitCode: 3, failureKind: 'application' });
  });
});

describe('a cancel that reaches the running job', () => {
  it('is cancelled even when the job traps the signal and exits 0', async () => {
    const ready = join(scratch, 'trapping');
    const job = await manager.submit(
      {
        argv: [
          'sh',
          '-c',
          'trap "exit 0" TERM; : > "$1"; while :; do sleep 0.1; done',
          'sh',
          ready,
        ],
      },
      { profile: 'here' },
    );
    await until(() => existsSync(ready), 30_000, 'the job sets its trap');
    const [after] = await manager.cancel([job.id], { waitMs: 15_000 });
    expect(after).toMatchObject({ state: 'cancelled', reason: 'cancelled', exitCode: 0 });
    expect(Date.parse(after?.finishedAt as string)).toBeGreaterThanOrEqual(
      Date.parse(after?.cancel?.reachedAt as string),
    );
  });

  it('is cancelled when the signal kills it', async () => {
    const ready = join(scratch, 'sleeping');
    const job = await manager.submit(
      { argv: ['sh', '-c', ': > "$1"; exec sleep 300', 'sh', ready] },
      { profile: 'here' },
    );
    await until(() => existsSync(ready), 30_000, 'the job runs');
    const [after] = await manager.cancel([job.id], { waitMs: 15_000 });
    expect(after).toMatchObject({ state: 'cancelled', signal: 'SIGTERM' });
  });

  it('a job released just before the cancel keeps whichever end really came first', async () => {
    const release = join(scratch, 'go');
    const job = await manager.submit(
      { argv: ['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.01; done', 'sh', release] },
      { profile: 'here' },
    );
    await until(
      async () => (await manager.status([job.id]))[0]?.state === 'running',
      30_000,
      'the job runs',
    );
    writeFileSync(release, '');
    const [after] = await manager.cancel([job.id], { waitMs: 15_000 });
    const ended = Date.parse(after?.finishedAt as string);
    const reached = after?.cancel?.reachedAt;
    if (after?.state === 'succeeded') {
      // It exited 0 on its own: before any cancel reached it.
      expect(reached === null || ended < Date.parse(reached as string)).toBe(true);
      expect(after.exitCode).toBe(0);
    } else {
      expect(after).toMatchObject({ state: 'cancelled' });
      expect(ended).toBeGreaterThanOrEqual(Date.parse(reached as string));
    }
  });
});
