/** Retention: the finished jobs of profiles with `retentionSeconds` forgotten by `list` (record and job directory), at most once an hour per ledger, under a lease shared by every yonder process, in bounded time. */
import { getErrorMessage } from '../errors/get-error-message.js';
import type { JobRecord } from '../spec/job.js';
import type { StoreProblemV1 } from '../spec/store/v1/store-v1.js';
import { isTerminal } from '../state/job-states.js';
import { type ForgetResult, forgetJobs } from './forget-jobs.js';
import type { ManagerContext } from './manager-context.js';

/** The least time between two complete sweeps of one ledger. */
export const RETENTION_SWEEP_MS = 3_600_000;

/** The most jobs one sweep forgets; the next `list` goes on with the rest. */
export const RETENTION_BATCH = 1000;

/** How long the targets may take to remove one sweep's files before they are tried again later. */
export const RETENTION_CLEANUP_MS = 10_000;

/** How long one sweep may hold its lease (a crashed sweeper's lease runs out after this). */
const SWEEP_LEASE_MS = 10 * 60_000;

const LEASE_KEY = 'retention-sweep';

/**
 * Forget every finished job whose profile (as saved now, with the backend and host the job was
 * submitted with) keeps jobs for `retentionSeconds` and that ended longer ago than that, with
 * its files on its target, as `prune` does. Nothing is done when no profile sets a retention,
 * when another process is sweeping, or when the last complete sweep of the ledger was less than
 * an hour ago (one dated in the future, after the clock was set back, does not hold sweeps off).
 * At most `RETENTION_BATCH` jobs a sweep, the next one going on at once with the rest; the
 * targets are given `RETENTION_CLEANUP_MS` together. A job whose files could not be removed
 * keeps its record and is tried again by the next sweep; one whose files are not its own to
 * remove (a link, another user's) is forgotten and its files left: both are reported. Never
 * throws: what went wrong is reported as a problem.
 */
export async function sweepRetention(context: ManagerContext): Promise<StoreProblemV1[]> {
  try {
    return await sweep(context);
  } catch (error) {
    return [
      {
        location: context.store.location,
        message: `retention: the sweep failed, and is tried again by the next list: ${getErrorMessage(error)}`,
      },
    ];
  }
}

async function sweep(context: ManagerContext): Promise<StoreProblemV1[]> {
  const { profiles, problems } = await context.store.listProfiles();
  const kept = new Map<string, { ms: number; backend: string; host: string }>();
  for (const profile of profiles)
    if (profile.retentionSeconds !== undefined)
      kept.set(profile.name.toLowerCase(), {
        ms: profile.retentionSeconds * 1000,
        backend: profile.backend,
        host: profile.host ?? '',
      });
  if (kept.size === 0) return [];
  const unread = problems.map((problem) => ({
    ...problem,
    message: `retention: this profile could not be read, so its jobs are kept for now: ${problem.message}`,
  }));
  const lease = await context.store.tryLease(LEASE_KEY, SWEEP_LEASE_MS);
  if (!lease) return unread;
  let completed = false;
  try {
    const now = context.now().getTime();
    const since = lease.lastCompletedAt === null ? NaN : now - Date.parse(lease.lastCompletedAt);
    if (since >= 0 && since < RETENTION_SWEEP_MS) return unread;
    const { jobs } = await context.store.listJobs({});
    const expired = jobs.filter((job) => isExpired(job, kept.get(job.profile.toLowerCase()), now));
    const batch = expired.slice(0, RETENTION_BATCH);
    const results =
      batch.length === 0
        ? []
        : await forgetJobs(context, batch, {
            keepUncleaned: true,
            cleanupDeadlineMs: RETENTION_CLEANUP_MS,
          });
    completed = expired.length <= RETENTION_BATCH;
    return [...unread, ...results.flatMap(reported)];
  } finally {
    await lease.release({ completed });
  }
}

/** Whether `job` ended longer ago than its profile's retention, submitted where the profile points now. */
function isExpired(
  job: JobRecord,
  keep: { ms: number; backend: string; host: string } | undefined,
  now: number,
): boolean {
  if (keep === undefined || !isTerminal(job.state)) return false;
  // A profile removed and added again elsewhere under the same name does not take the old
  // profile's jobs with it.
  if (job.profileSnapshot.backend !== keep.backend) return false;
  if ((job.profileSnapshot.host ?? '') !== keep.host) return false;
  const ended = Date.parse(job.finishedAt ?? job.updatedAt ?? job.createdAt);
  return Number.isFinite(ended) && ended <= now - keep.ms;
}

/** What a sweep says of a job it could not wholly forget. */
function reported(result: ForgetResult): StoreProblemV1[] {
  const location = `job ${result.id}`;
  if (!result.removed)
    return [
      {
        location,
        message: `retention: job ${result.id} is kept, its files could not be removed (${result.message ?? result.files}); the next sweep tries again`,
      },
    ];
  if (result.files === 'kept')
    return [
      {
        location,
        message: `retention: job ${result.id} is forgotten, but its files were left: ${result.message ?? 'not its own to remove'}`,
      },
    ];
  return [];
}
