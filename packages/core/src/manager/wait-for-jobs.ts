/** Waiting for jobs to end, on the one waiting loop: `wait` (changes reported, a timeout, a signal) and the wait after a cancel. */
import type { JobRecord } from '../spec/job.js';
import { isTerminal } from '../state/job-states.js';
import { jobRoute } from './job-route.js';
import { type ManagerContext, reread } from './manager-context.js';
import { refreshJobs } from './refresh-jobs.js';
import { waitLoop } from './wait-loop.js';

export interface WaitOptions {
  timeoutMs?: number;
  /** Called whenever a job's state changes. */
  onChange?: (job: JobRecord) => void;
  /**
   * Called once per target when its jobs could not be polled (and again if it recovers and
   * fails again): the target, the error, since when (the first failed poll this wait saw).
   */
  onUnreachable?: (failure: TargetFailure) => void;
  /** End the wait (`gaveUp`) once a target has failed every poll for this long. */
  giveUpAfterMs?: number;
  signal?: AbortSignal;
}

/** A target whose jobs could not be polled. */
export interface TargetFailure {
  /** The backend's target key (`local:host`, `slurm:login1:`…). */
  target: string;
  backend: string;
  error: { code: string; message: string };
  /** When this wait first saw the failure (ISO time). */
  since: string;
  /** The jobs waiting on it. */
  jobs: string[];
  /** The profiles of those jobs (what the user named; the target key is yonder's own). */
  profiles: string[];
}

/** The targets of active jobs whose last poll failed, with their jobs and error. */
export function failingTargets(
  jobs: readonly JobRecord[],
): Map<string, Omit<TargetFailure, 'since'>> {
  const out = new Map<string, Omit<TargetFailure, 'since'>>();
  for (const job of jobs) {
    if (isTerminal(job.state) || job.error === null || job.state === 'submitting') continue;
    const key = jobRoute(job);
    const entry = out.get(key) ?? {
      target: job.target,
      backend: job.backend,
      error: job.error,
      jobs: [],
      profiles: [],
    };
    entry.jobs.push(job.id);
    if (!entry.profiles.includes(job.profile)) entry.profiles.push(job.profile);
    out.set(key, entry);
  }
  return out;
}

/** The longest pause while these jobs run: their profiles' poll interval, at least the backoff's ceiling. */
function pollCeiling(context: ManagerContext, jobs: readonly JobRecord[]): number {
  return Math.max(
    context.backoff.maxMs,
    ...jobs
      .filter((job) => !isTerminal(job.state))
      .map((job) => (job.profileSnapshot.pollSeconds ?? 2) * 1000),
  );
}

/**
 * Refresh until every job is terminal. Resolves with the jobs; `timedOut` is true when the
 * time ran out (or the signal aborted) first.
 */
export async function waitForJobs(
  context: ManagerContext,
  initial: readonly JobRecord[],
  options: WaitOptions = {},
): Promise<{ jobs: JobRecord[]; timedOut: boolean; gaveUp: TargetFailure | null }> {
  let jobs = [...initial];
  const seen = new Map(jobs.map((job) => [job.id, job.state]));
  // Each failing target: as reported (`since` is the wall time of the first failed poll seen)
  // and when that was on the wait's own clock, which measures how long it has failed.
  const failing = new Map<string, { failure: TargetFailure; firstSeen: number }>();
  let gaveUp: TargetFailure | null = null;
  const watchTargets = (): boolean => {
    const now = context.clock.now();
    const current = failingTargets(jobs);
    for (const key of failing.keys()) if (!current.has(key)) failing.delete(key);
    for (const [key, failure] of current) {
      let known = failing.get(key);
      if (!known) {
        known = { failure: { ...failure, since: context.now().toISOString() }, firstSeen: now };
        failing.set(key, known);
        options.onUnreachable?.(known.failure);
      }
      if (options.giveUpAfterMs !== undefined && now - known.firstSeen >= options.giveUpAfterMs) {
        gaveUp = { ...failure, since: known.failure.since };
        return true;
      }
    }
    return false;
  };
  const outcome = await waitLoop(
    async () => {
      const active = jobs.filter((job) => !isTerminal(job.state));
      if (active.length > 0) {
        await refreshJobs(context, { ids: active.map((job) => job.id) });
        jobs = await reread(context, jobs);
      }
      for (const job of jobs) {
        if (seen.get(job.id) !== job.state) {
          seen.set(job.id, job.state);
          options.onChange?.(job);
        }
      }
      if (jobs.every((job) => isTerminal(job.state))) return 'done';
      return watchTargets() ? 'done' : 'idle';
    },
    {
      backoff: context.backoff,
      clock: context.clock,
      ...(options.timeoutMs === undefined
        ? {}
        : { deadline: context.clock.now() + options.timeoutMs }),
      ...(options.signal ? { signal: options.signal } : {}),
      ceilingMs: () => pollCeiling(context, jobs),
    },
  );
  return { jobs, timedOut: outcome !== 'done', gaveUp };
}

/**
 * Refresh (forcing the poll) until the jobs are terminal or `waitMs` is up; at least once.
 * Returns the jobs still in the ledger.
 */
export async function waitForCancelled(
  context: ManagerContext,
  ids: readonly string[],
  waitMs: number,
): Promise<JobRecord[]> {
  let current: Array<JobRecord | undefined> = [];
  await waitLoop(
    async () => {
      await refreshJobs(context, { ids, force: true });
      current = await Promise.all(ids.map((id) => context.store.getJob(id)));
      return current.every((job) => !job || isTerminal(job.state)) ? 'done' : 'idle';
    },
    {
      backoff: context.cancelBackoff,
      clock: context.clock,
      deadline: context.clock.now() + waitMs,
    },
  );
  return current.filter((job): job is JobRecord => job !== undefined);
}
