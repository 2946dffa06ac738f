/** Retention: the finished jobs of profiles with `retentionSeconds` forgotten by a refresh (record and job directory), at most once an hour per ledger, under a lease shared by every yonder process. */
import type { StoreProblemV1 } from '../spec/store/v1/store-v1.js';
import { isTerminal } from '../state/job-states.js';
import { forgetJobs } from './forget-jobs.js';
import type { ManagerContext } from './manager-context.js';

/** The least time between two sweeps of one ledger. */
export const RETENTION_SWEEP_MS = 3_600_000;

/** How long one sweep may hold its lease (a crashed sweeper's lease runs out after this). */
const SWEEP_LEASE_MS = 10 * 60_000;

const LEASE_KEY = 'retention-sweep';

/**
 * Forget every finished job whose profile (as saved now) keeps jobs for `retentionSeconds`
 * and that ended longer ago than that, with its files on its target, as `prune` does. Nothing
 * is done when no profile sets a retention, when another process is sweeping, or when the last
 * sweep of the ledger completed less than an hour ago (a last sweep in the future, after the
 * clock was set back, does not hold sweeps off). A job whose files could not be removed keeps
 * its record, reported, and is tried again by the next sweep.
 */
export async function sweepRetention(context: ManagerContext): Promise<StoreProblemV1[]> {
  const { profiles } = await context.store.listProfiles();
  const keepMs = new Map<string, number>();
  for (const profile of profiles)
    if (profile.retentionSeconds !== undefined)
      keepMs.set(profile.name.toLowerCase(), profile.retentionSeconds * 1000);
  if (keepMs.size === 0) return [];
  const lease = await context.store.tryLease(LEASE_KEY, SWEEP_LEASE_MS);
  if (!lease) return [];
  let completed = false;
  try {
    const now = context.now().getTime();
    const since = lease.lastCompletedAt === null ? NaN : now - Date.parse(lease.lastCompletedAt);
    if (since >= 0 && since < RETENTION_SWEEP_MS) return [];
    const { jobs } = await context.store.listJobs({});
    const expired = jobs.filter((job) => {
      const keep = keepMs.get(job.profile.toLowerCase());
      if (keep === undefined || !isTerminal(job.state)) return false;
      const ended = Date.parse(job.finishedAt ?? job.updatedAt ?? job.createdAt);
      return Number.isFinite(ended) && ended <= now - keep;
    });
    const results =
      expired.length === 0 ? [] : await forgetJobs(context, expired, { keepUncleaned: true });
    completed = true;
    return results
      .filter((result) => !result.removed)
      .map((result) => ({
        location: `job ${result.id}`,
        message: `past its profile's retention, but kept: its files could not be removed (${result.message ?? result.files}); the next sweep tries again`,
      }));
  } finally {
    await lease.release({ completed });
  }
}
