import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { JobManager } from '@yonder/core';
import { until } from '@yonder/test-helpers';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireCluster, untilPurged } from './test-support/cluster.js';
import {
  type HeldJob,
  heldJob,
  releaseHeldJobs,
  shimmedSlurm,
} from './test-support/shimmed-slurm.js';
import { behaviours } from './test-support/slurm-shims.js';

// Issue 12: a job is lost only when no source knows it; sick queries change nothing.
beforeAll(() => requireCluster());
afterEach(() => releaseHeldJobs());

describe('absence is decided with the target’s own evidence', () => {
  // Started first, checked last: Slurm purges finished jobs from squeue only after MinJobAge.
  let purged: Awaited<ReturnType<typeof shimmedSlurm>>;
  let purgedJob = '';
  beforeAll(async () => {
    purged = await shimmedSlurm();
    purgedJob = (await purged.manager.submit({ argv: ['true'] }, { profile: 'hpc' })).id;
  });

  it.each([
    ['exits 0 with no rows', behaviours.noRows, 'query-failed'],
    ['shows stale RUNNING rows', behaviours.staleRunning, 'absent'],
    [
      'says "Problem talking to the database" on stderr and exits 0',
      behaviours.databaseError,
      'query-failed',
    ],
  ])(
    'a running job squeue forgets stays running while sacct %s, and succeeds from its exit-code file once it exits 0',
    async (_title, sacct, kind) => {
      const { manager, shims } = await shimmedSlurm();
      const { job, release } = await runningHeldJob(manager);
      // squeue still lists a held job beside it: its answer is healthy, only this job is missing.
      await heldJob(manager, { schedulerOptions: ['--hold'] });
      shims.behave('squeue', behaviours.forget(job.externalId as string));
      shims.behave('sacct', sacct);
      const before = shims.calls('sacct').length;
      // More polls than the manager's healthy-miss count: neither a sick sacct nor the
      // absence grace (120 s) lets the job be lost.
      for (let poll = 0; poll < 4; poll += 1) {
        const [current] = await manager.status([job.id]);
        expect(current).toMatchObject({ state: 'running', finishedAt: null });
        if (kind === 'absent') expect(current?.misses).toBe(poll + 1);
        else
          expect(current).toMatchObject({
            misses: 0,
            error: { code: 'E_SCHEDULER_UNAVAILABLE', message: expect.stringMatching(/sacct/) },
          });
      }
      expect(shims.calls('sacct').length).toBe(before + 4);
      release();
      const jobDir = String(job.data.jobDir);
      await until(
        () => existsSync(`${jobDir}/exit-code`),
        30_000,
        'the wrapper records the exit code',
      );
      const [done] = await manager.status([job.id]);
      expect(done).toMatchObject({ state: 'succeeded', exitCode: 0, failureKind: null });
      expect(done?.history.at(-1)).toMatchObject({ to: 'succeeded', source: 'exit-code-file' });
    },
    90_000,
  );

  it('a squeue that exits 0 with no rows and an error on stderr changes nothing, and the cancel keeps being sent', async () => {
    const { manager, shims } = await shimmedSlurm();
    const { job } = await runningHeldJob(manager);
    const running = await manager.store.getJob(job.id);
    shims.behave('squeue', behaviours.squeueError);
    for (let poll = 0; poll < 4; poll += 1) {
      const [current] = await manager.status([job.id]);
      expect(current).toMatchObject({
        state: 'running',
        misses: 0,
        history: running?.history,
        error: {
          code: 'E_SCHEDULER_UNAVAILABLE',
          message: expect.stringContaining('squeue failed'),
        },
      });
    }
    await manager.cancel([job.id]);
    const sent = shims.calls('scancel').length;
    for (let poll = 1; poll <= 3; poll += 1) {
      // Each refresh comes after the manager's repeat interval (the last send a minute ago).
      await manager.store.updateJob(job.id, (current) =>
        current.cancel
          ? {
              ...current,
              cancel: {
                ...current.cancel,
                lastSentAt: new Date(Date.now() - 60_000).toISOString(),
              },
            }
          : undefined,
      );
      await manager.refresh({ ids: [job.id], force: true });
      expect((await manager.store.getJob(job.id))?.state).toBe('running');
      expect(shims.calls('scancel').length).toBe(sent + poll);
    }
    shims.behave('squeue', null);
    const { jobs } = await manager.wait([job.id], { timeoutMs: 60_000 });
    expect(jobs[0]).toMatchObject({ state: 'cancelled' });
  }, 90_000);

  it('a job no source vouches for is still lost after the grace and the healthy misses', async () => {
    // Grace 0: only the manager's count of healthy misses holds the job.
    const { manager, shims } = await shimmedSlurm({ absentGraceSeconds: 0 });
    const { job } = await runningHeldJob(manager);
    await heldJob(manager, { schedulerOptions: ['--hold'] });
    // A runaway record: sacct still says RUNNING, squeue lists another job but not this one, no exit code.
    shims.behave('squeue', behaviours.forget(job.externalId as string));
    shims.behave('sacct', behaviours.staleRunning);
    const states: string[] = [];
    for (let poll = 0; poll < 3; poll += 1)
      states.push(((await manager.status([job.id]))[0]?.state ?? '') as string);
    expect(states).toEqual(['running', 'running', 'failed']);
    expect(await manager.store.getJob(job.id)).toMatchObject({
      reason: 'lost',
      failureKind: 'infrastructure',
    });
  }, 60_000);

  it('a running job stays running while squeue answers empty (exit 0, no error) and sacct says RUNNING: an unhealthy query, not an absence', async () => {
    // Grace 0: before, the manager's healthy misses alone made the job lost within three polls.
    const { manager, shims } = await shimmedSlurm({ absentGraceSeconds: 0 });
    const { job, release } = await runningHeldJob(manager);
    const running = await manager.store.getJob(job.id);
    shims.behave('squeue', behaviours.noRows);
    for (let poll = 0; poll < 5; poll += 1) {
      const [current] = await manager.status([job.id]);
      expect(current).toMatchObject({
        state: 'running',
        misses: 0,
        history: running?.history,
        error: {
          code: 'E_SCHEDULER_UNAVAILABLE',
          message: expect.stringContaining(
            `squeue listed no job at all while sacct says Slurm job ${job.externalId} is RUNNING`,
          ),
        },
      });
    }
    shims.behave('squeue', null);
    release();
    const { jobs } = await manager.wait([job.id], { timeoutMs: 60_000 });
    expect(jobs[0]).toMatchObject({ state: 'succeeded', exitCode: 0, error: null });
  }, 120_000);

  it('a job purged from squeue (MinJobAge) that exited 0 succeeds though sacct cannot reach its database', async () => {
    const externalId = (await purged.manager.store.getJob(purgedJob))?.externalId as string;
    await untilPurged(externalId, 150_000);
    purged.shims.behave('sacct', behaviours.databaseError);
    const [job] = await purged.manager.status([purgedJob]);
    expect(job).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect(job?.history.at(-1)?.source).toBe('exit-code-file');
    expect(purged.shims.calls('sacct').length).toBeGreaterThan(0);
  }, 180_000);
});

/**
 * A held job (see `heldJob`) once squeue shows it running and sacct has it under its own name
 * (for a moment after the start sacct names the record "allocation").
 */
async function runningHeldJob(manager: JobManager): Promise<HeldJob> {
  const held = await heldJob(manager);
  const { job } = held;
  await until(
    async () => (await manager.status([job.id]))[0]?.state === 'running',
    60_000,
    'the job runs',
    250,
  );
  const id = job.externalId as string;
  await until(
    () =>
      execFileSync('sacct', ['-n', '-P', '-X', `--jobs=${id}`, '--format=JobName'], {
        encoding: 'utf8',
      })
        .split('\n')
        .includes(String(job.data.jobName)),
    60_000,
    `sacct names job ${id} ${String(job.data.jobName)}`,
    250,
  );
  return held;
}
