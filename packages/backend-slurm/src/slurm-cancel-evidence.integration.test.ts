import { execFileSync } from 'node:child_process';
import { until } from '@yonder/test-helpers';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireCluster } from './test-support/cluster.js';
import { heldJob, releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';
import { behaviours } from './test-support/slurm-shims.js';

// Issue 24 item 26: a cancel Slurm accepted is evidence of the end of a pending job.
beforeAll(() => requireCluster());
afterEach(() => releaseHeldJobs());

describe('a pending job cancelled by yonder', () => {
  it('is cancelled as soon as squeue shows the cancel, while sacct answers empty', async () => {
    const { manager, shims } = await shimmedSlurm();
    const { job } = await heldJob(manager, { schedulerOptions: ['--hold'] });
    shims.behave('sacct', behaviours.noRows);
    const [cancelled] = await manager.cancel([job.id], { waitMs: 0 });
    expect(cancelled?.cancel).toMatchObject({ reason: 'user' });
    // Once squeue shows the cancel, the next poll settles the job: no waiting for accounting
    // (which says nothing), nor for the absence grace once Slurm forgets the job.
    await until(
      () =>
        execFileSync('squeue', ['--me', '--noheader', '--states=all', '--format=%A %T'], {
          encoding: 'utf8',
        })
          .split('\n')
          .includes(`${job.externalId} CANCELLED`),
      60_000,
      'squeue shows the job CANCELLED',
      250,
    );
    const [settled] = await manager.status([job.id]);
    expect(settled).toMatchObject({
      state: 'cancelled',
      reason: 'cancelled',
      failureKind: null,
      error: null,
    });
    expect(settled?.history.at(-1)).toMatchObject({ to: 'cancelled', source: 'squeue' });
    expect(shims.calls('scancel').length).toBeGreaterThan(0);
  }, 180_000);
});
