import { execFileSync } from 'node:child_process';
import type { JobRecord } from '@yonder/core';
import { until } from '@yonder/test-helpers';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireCluster } from './test-support/cluster.js';
import { heldJob, releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';

// Issue 24 item 30: after a requeue, the run that counts gives Started and Duration; the history keeps both runs.
beforeAll(() => requireCluster());
afterEach(() => releaseHeldJobs());

describe('a requeued job (requeue=true)', () => {
  it('shows the rerun’s start, and its duration, not the first run’s; the history keeps each start', async () => {
    const { manager } = await shimmedSlurm(undefined, { requeue: true });
    const { job, release } = await heldJob(manager);
    const id = job.externalId as string;
    const seen = async (state: string): Promise<JobRecord> => {
      let record: JobRecord | undefined;
      await until(
        async () => {
          [record] = await manager.status([job.id]);
          return record?.state === state;
        },
        90_000,
        `the job is ${state}`,
        250,
      );
      return record as JobRecord;
    };
    const first = await seen('running');
    const firstStart = first.startedAt as string;
    expect(firstStart).toEqual(expect.any(String));
    execFileSync('scontrol', ['requeue', id]);
    await seen('pending');
    // A requeued job waits about two minutes before it is eligible again; let it start now.
    execFileSync('scontrol', ['update', `jobid=${id}`, 'StartTime=now']);
    const rerun = await seen('running');
    expect(Date.parse(rerun.startedAt as string)).toBeGreaterThan(Date.parse(firstStart));
    release();
    const { jobs } = await manager.wait([job.id], { timeoutMs: 90_000 });
    const done = jobs[0] as JobRecord;
    expect(done).toMatchObject({ state: 'succeeded', startedAt: rerun.startedAt });
    expect(Date.parse(done.finishedAt as string)).toBeGreaterThanOrEqual(
      Date.parse(rerun.startedAt as string) - 1000,
    );
    // The history keeps both runs: each start on the transition that brought it.
    const starts = done.history.flatMap((entry) => (entry.startedAt ? [entry.startedAt] : []));
    expect(starts).toEqual([firstStart, rerun.startedAt]);
    expect(done.history.map((entry) => entry.to)).toEqual(
      expect.arrayContaining(['running', 'pending', 'running', 'succeeded']),
    );
  }, 240_000);
});
