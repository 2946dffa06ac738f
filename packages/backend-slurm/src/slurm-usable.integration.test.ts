import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireCluster } from './test-support/cluster.js';
import { heldJob, releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';
import { behaviours } from './test-support/slurm-shims.js';

// Issue 24 item 27: one rule for "Slurm is not usable", whether the check is cached or fresh.
beforeAll(() => requireCluster());
afterEach(() => releaseHeldJobs());

describe('while slurmdbd is down (sacct fails)', () => {
  it('a fresh state directory submits, as one with a cached check does; profile check names the problem', async () => {
    // Fresh: the first submit of this ledger probes Slurm while accounting is down.
    const fresh = await shimmedSlurm();
    fresh.shims.behave('sacct', behaviours.databaseDown);
    const first = await heldJob(fresh.manager, { schedulerOptions: ['--hold'] });
    expect(first.job).toMatchObject({ state: 'pending', error: null });
    expect(first.job.externalId).toMatch(/^\d+$/);
    // Cached: the check was made while accounting answered, then slurmdbd went down.
    const cached = await shimmedSlurm();
    await heldJob(cached.manager, { schedulerOptions: ['--hold'] });
    cached.shims.behave('sacct', behaviours.databaseDown);
    const second = await heldJob(cached.manager, { schedulerOptions: ['--hold'] });
    expect(second.job).toMatchObject({ state: 'pending', error: null });
    // The fresh check of profile check says what is wrong, and that it lasts only until it answers.
    const check = await fresh.manager.checkProfile('hpc');
    expect(check.probe).toMatchObject({
      ok: false,
      facts: { accounting: false },
      problems: [
        expect.stringMatching(
          /^Slurm accounting \(sacct\) does not answer now: .*Problem talking to the database: Connection refused\. Jobs that leave squeue are resolved once it answers again\.$/s,
        ),
      ],
    });
  }, 120_000);
});
