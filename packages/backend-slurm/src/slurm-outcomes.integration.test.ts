/** Issue 12 on the real cluster: the true end wins over a late cancel, and a job's times are Slurm's and its wrapper's, never yonder's poll times. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JobManager } from '@yonder/core';
import { until } from '@yonder/test-helpers';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireCluster } from './test-support/cluster.js';
import { heldJob, releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';

beforeAll(() => requireCluster());
afterEach(() => releaseHeldJobs());

/** sacct's own answer (the real command, not a shim): State, ExitCode, Start, End. */
function accounting(externalId: string): {
  state: string;
  exit: string;
  start: string;
  end: string;
} {
  const line = execFileSync(
    'sacct',
    ['-n', '-P', '-X', `--jobs=${externalId}`, '--format=State,ExitCode,Start,End'],
    { encoding: 'utf8', env: { ...process.env, TZ: 'UTC', SLURM_TIME_FORMAT: 'standard' } },
  )
    .split('\n')
    .find((text) => text.trim() !== '');
  const [state = '', exit = '', start = '', end = ''] = (line ?? '').split('|');
  return { state, exit, start, end };
}

/** Wait (asking Slurm, never the manager) until sacct has the job's final row. */
async function untilAccounted(externalId: string, states: RegExp): Promise<void> {
  await until(
    () => states.test(accounting(externalId).state),
    90_000,
    `sacct shows job ${externalId} ended`,
    500,
  );
}

/** The wrapper's own record of the end (epoch seconds with fractions) as a time in ms. */
function wrapperEnd(jobDir: string): number {
  return Number(readFileSync(join(jobDir, 'ended-at'), 'utf8').trim()) * 1000;
}

async function untilRunning(manager: JobManager, id: string): Promise<void> {
  await until(
    async () => (await manager.status([id]))[0]?.state === 'running',
    60_000,
    'the job runs',
    250,
  );
}

describe('the true end wins over a late cancel', () => {
  it('a job that completed (exit 0) before `cancel` arrived stays succeeded', async () => {
    const { manager, shims } = await shimmedSlurm();
    const job = await manager.submit({ argv: ['sh', '-c', 'echo done'] }, { profile: 'hpc' });
    const id = job.externalId as string;
    await untilAccounted(id, /^COMPLETED$/);
    // The ledger has not been told yet: it still says what the submit saw.
    expect((await manager.store.getJob(job.id))?.state).not.toBe('succeeded');
    const [after] = await manager.cancel([job.id], { waitMs: 60_000 });
    expect(after).toMatchObject({ state: 'succeeded', exitCode: 0, failureKind: null });
    expect(after?.history.at(-1)).toMatchObject({ to: 'succeeded', nativeState: 'COMPLETED' });
    expect(Date.parse(after?.finishedAt as string)).toBeLessThan(
      Date.parse(after?.cancel?.requestedAt as string),
    );
    // The cancel was sent (scancel answers 0 for a finished job), and changed nothing.
    expect(shims.calls('scancel').some((call) => call.includes(id))).toBe(true);
  }, 120_000);

  it('a job that failed on its own before `cancel` arrived stays failed with its exit code', async () => {
    const { manager } = await shimmedSlurm();
    const job = await manager.submit({ argv: ['sh', '-c', 'exit 4'] }, { profile: 'hpc' });
    await untilAccounted(job.externalId as string, /^FAILED$/);
    const [after] = await manager.cancel([job.id], { waitMs: 60_000 });
    expect(after).toMatchObject({ state: 'failed', exitCode: 4, failureKind: 'application' });
  }, 120_000);

  it('a cancel racing the job’s own exit 0 keeps whichever really happened', async () => {
    const { manager } = await shimmedSlurm();
    const { job, release } = await heldJob(manager);
    await untilRunning(manager, job.id);
    release();
    const [after] = await manager.cancel([job.id], { waitMs: 60_000 });
    const id = job.externalId as string;
    await untilAccounted(id, /^(COMPLETED|CANCELLED)/);
    const truth = accounting(id);
    const jobDir = String(job.data.jobDir);
    const exitedFirst =
      truth.state === 'COMPLETED' ||
      (existsSync(join(jobDir, 'exit-code')) &&
        readFileSync(join(jobDir, 'exit-code'), 'utf8').trim() === '0' &&
        wrapperEnd(jobDir) < Date.parse(after?.cancel?.reachedAt as string));
    const [settled] = await manager.status([job.id]);
    expect(settled?.state).toBe(exitedFirst ? 'succeeded' : 'cancelled');
  }, 120_000);

  it('a cancel that reaches a running job still ends it cancelled', async () => {
    const { manager } = await shimmedSlurm();
    const { job } = await heldJob(manager);
    await untilRunning(manager, job.id);
    const [after] = await manager.cancel([job.id], { waitMs: 60_000 });
    expect(after).toMatchObject({ state: 'cancelled', failureKind: null });
    expect(after?.cancel?.reachedAt).toEqual(expect.any(String));
  }, 120_000);
});

describe('REVOKED (a federation sibling started the job elsewhere)', () => {
  it('is unknown with its own reason, kept over later sightings, and never final', async () => {
    const { manager, shims } = await shimmedSlurm();
    const { job, release } = await heldJob(manager);
    await untilRunning(manager, job.id);
    shims.behave(
      'squeue',
      `"$real" "$@" | awk -F'|' -v id=${job.externalId} 'BEGIN { OFS = "|" } $1 == id { $3 = "REVOKED" } { print }'`,
    );
    const revoked = 'revoked (the job started on another cluster of the federation)';
    for (let poll = 0; poll < 3; poll += 1) {
      const [seen] = await manager.status([job.id]);
      expect(seen).toMatchObject({ state: 'unknown', nativeState: 'REVOKED', reason: revoked });
      expect(seen?.finishedAt).toBeNull();
    }
    shims.behave('squeue', null);
    const [back] = await manager.status([job.id]);
    expect(back).toMatchObject({ state: 'running', reason: null });
    release();
    const { jobs } = await manager.wait([job.id], { timeoutMs: 60_000 });
    expect(jobs[0]).toMatchObject({ state: 'succeeded', exitCode: 0 });
  }, 120_000);
});

describe('the job’s own times', () => {
  it('startedAt is when Slurm started the job and finishedAt when it ended, not when yonder looked', async () => {
    const { manager } = await shimmedSlurm();
    const job = await manager.submit({ argv: ['sleep', '2'] }, { profile: 'hpc' });
    const id = job.externalId as string;
    await untilRunning(manager, job.id);
    const running = await manager.store.getJob(job.id);
    const truthWhileRunning = accounting(id);
    // squeue's StartTime, which sacct agrees with (to the second, in UTC).
    expect(running?.startedAt).toBe(`${truthWhileRunning.start}.000Z`);
    await untilAccounted(id, /^COMPLETED$/);
    // yonder looks only well after the end: the times must not move with it.
    await until(
      () => Date.now() > wrapperEnd(String(job.data.jobDir)) + 3_000,
      10_000,
      'a few seconds after the end',
      500,
    );
    const [done] = await manager.status([job.id]);
    const truth = accounting(id);
    expect(done).toMatchObject({ state: 'succeeded', startedAt: `${truth.start}.000Z` });
    const finished = Date.parse(done?.finishedAt as string);
    // The wrapper's recorded end, to the millisecond.
    expect(Math.abs(finished - wrapperEnd(String(job.data.jobDir)))).toBeLessThan(1);
    expect(finished).toBeGreaterThanOrEqual(Date.parse(`${truth.end}Z`) - 1_000);
    expect(finished).toBeLessThan(Date.parse(`${truth.end}Z`) + 1_000);
    expect(Date.parse(done?.noticedAt as string) - finished).toBeGreaterThanOrEqual(3_000);
    const duration = finished - Date.parse(done?.startedAt as string);
    expect(duration).toBeGreaterThanOrEqual(1_000);
    expect(duration).toBeLessThan(10_000);
  }, 120_000);
});
