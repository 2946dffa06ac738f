/** The refresh cycle: per target, under a lease shared with other yonder processes, recover interrupted submits, repeat cancels, poll every job in one call, apply the state rules and enforce pending timeouts. */
import { toYonderError } from '../errors/yonder-error.js';
import { isProcessAlive } from '../process/process-identity.js';
import type {
  BackendContextV1,
  BackendV1,
  ObservationV1,
  SubmitResultV1,
} from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import type { StoreProblemV1 } from '../spec/store/v1/store-v1.js';
import { applyObservation, type StatePolicy, transition } from '../state/apply-observation.js';
import { isTerminal } from '../state/job-states.js';
import { repeatCancels, sendCancel } from './cancel-jobs.js';
import { isWaiting, settleWaitingJobs } from './dependencies.js';
import { jobRoute } from './job-route.js';
import { backendJob, type ManagerContext } from './manager-context.js';
import { applySubmitResult, releaseHeldJobs, sha256, submitRequest } from './submit-jobs.js';

export interface RefreshOptions {
  /** Only these job ids (default: every active job). */
  ids?: readonly string[];
  /** Poll even if another process polled the target a moment ago. */
  force?: boolean;
}

/** Whether a change leaves a record as it was (ignoring bookkeeping the store sets). */
function unchanged(before: JobRecord, after: JobRecord): boolean {
  if (before === after) return true;
  return (
    JSON.stringify({ ...before, updatedAt: '', revision: 0 }) ===
    JSON.stringify({ ...after, updatedAt: '', revision: 0 })
  );
}

/**
 * Bring active jobs up to date: for each target, one batched poll, shared with any other
 * yonder process refreshing the same target at the same time.
 */
export async function refreshJobs(
  context: ManagerContext,
  options: RefreshOptions = {},
): Promise<{ problems: StoreProblemV1[] }> {
  // A poll shared with another process answers for this caller only if it covered the jobs
  // as read here (see sharedPollCovers).
  const begun = Date.now();
  const { jobs, problems } = await context.store.listJobs({ activeOnly: true });
  const times = { begun, listedAt: Date.now() };
  const wanted = options.ids ? withParents(options.ids, jobs) : null;
  // Asked for some jobs, poll every active job of their targets: still one command per
  // target, and the poll then covers whatever another process sharing it asked about.
  const targets = wanted ? new Set(jobs.filter((job) => wanted.has(job.id)).map(jobRoute)) : null;
  const groups = new Map<string, { backend: BackendV1; jobs: JobRecord[] }>();
  for (const job of jobs) {
    // A job yonder holds back is nowhere to poll: its parents are (below).
    if (isWaiting(job)) continue;
    if (targets && !targets.has(jobRoute(job))) continue;
    let backend: BackendV1;
    try {
      backend = await context.resolveBackend(job.backend, job.profileSnapshot);
    } catch (error) {
      await context.store.updateJob(job.id, (current) => ({
        ...current,
        error: toYonderError(error).toJSON(),
      }));
      continue;
    }
    const key = jobRoute(job);
    const group = groups.get(key) ?? { backend, jobs: [] };
    group.jobs.push(job);
    groups.set(key, group);
  }
  await Promise.all(
    [...groups.entries()].map(([key, group]) =>
      refreshTarget(context, key, group.backend, group.jobs, options.force ?? false, times),
    ),
  );
  // Dependents whose parents this refresh saw end (or start) are released or settled now.
  if (jobs.some(isWaiting))
    await settleWaitingJobs(context, (held) => releaseHeldJobs(context, held));
  return { problems };
}

/**
 * The jobs asked for and, for each one yonder holds back, the active jobs it waits for, and
 * theirs: refreshing a dependent refreshes what decides when it starts, whatever their target.
 */
function withParents(ids: readonly string[], jobs: readonly JobRecord[]): Set<string> {
  const active = new Map(jobs.map((job) => [job.id, job]));
  const wanted = new Set(ids);
  const queue = [...ids];
  for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
    for (const dependency of active.get(id)?.after ?? []) {
      if (wanted.has(dependency.job) || !active.has(dependency.job)) continue;
      wanted.add(dependency.job);
      queue.push(dependency.job);
    }
  }
  return wanted;
}

async function refreshTarget(
  context: ManagerContext,
  key: string,
  backend: BackendV1,
  jobs: JobRecord[],
  force: boolean,
  times: { readonly begun: number; readonly listedAt: number },
): Promise<void> {
  const leaseKey = `poll-${sha256(key).slice(0, 24)}`;
  // Taken and given back by each poller, under the poll lease, just before it lists the
  // target's jobs: its completion time is when the latest poll's listing began.
  const listedKey = `${leaseKey}-listed`;
  let lease = await context.store.tryLease(leaseKey, context.leaseTtlMs);
  // Another process is polling this target. Its poll counts for us only if it covered our jobs
  // as we read them and completed after we began asking; otherwise we poll ourselves, still
  // one command for every job of the target.
  for (let attempt = 0; !lease && attempt < 3; attempt += 1) {
    await context.store.waitForLease(leaseKey, context.leaseTtlMs);
    lease = await context.store.tryLease(leaseKey, context.leaseTtlMs);
  }
  if (!lease) return;
  let completed = false;
  try {
    if (!force && (await sharedPollCovers(context, listedKey, lease, jobs, times))) return;
    const listed = await context.store.tryLease(listedKey, context.leaseTtlMs);
    await listed?.release({ completed: true });
    // The listing starts only once the clock has passed the mark's millisecond, so a caller
    // whose own listing ended within that millisecond is covered too. The wait is bounded on
    // the monotonic clock: a wall clock stepped back (an NTP step, a resumed VM) would
    // otherwise hold this poll, and every wait and list behind it, for as long as the step.
    await pastMillisecond(Date.now());
    // Listed again under the lease, after that mark: the poll covers every job of the target
    // in the ledger before it, including any made while this process waited for the lease.
    // Every write below re-applies its change to the record as it is then.
    const fresh = await context.store.listJobs({ activeOnly: true });
    const ours = new Set(jobs.map(jobRoute));
    const current = fresh.jobs.filter((job) => ours.has(jobRoute(job)));
    const active = current.filter((job) => !isTerminal(job.state));
    if (active.length === 0) {
      completed = true;
      return;
    }
    const backendContext = await context.backendContext(
      (active[0] as JobRecord).profileSnapshot,
      backend,
    );
    const submitting = active.filter((job) => job.state === 'submitting');
    const recovered = await recoverSubmits(context, backend, submitting, backendContext);
    const pollable = active
      .map((job) => recovered.get(job.id) ?? job)
      .filter((job) => !isTerminal(job.state) && job.externalId !== null);
    await repeatCancels(
      context,
      backend,
      pollable.filter((job) => job.cancel !== null),
      backendContext,
    );
    const polled = await pollJobs(context, backend, pollable, backendContext);
    await enforcePendingTimeouts(context, backend, polled, backendContext);
    completed = true;
  } finally {
    await lease.release({ completed });
  }
}

/**
 * Resolve once the wall clock reads past `marked`, or after two milliseconds of monotonic time
 * if it does not (it was stepped back meanwhile; marks from then answer for no one anyway).
 */
export async function pastMillisecond(
  marked: number,
  clocks: { wall: () => number; monotonic: () => number } = {
    wall: Date.now,
    monotonic: () => performance.now(),
  },
): Promise<void> {
  const deadline = clocks.monotonic() + 2;
  while (clocks.wall() <= marked && clocks.monotonic() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/**
 * A record written this little before a poll's listing began may not have been in place yet
 * when the listing read the ledger (its writer stamps it, then renames it into place): only
 * records older than this count as covered by their time alone.
 */
const WRITE_SKEW_MS = 1_000;

/**
 * Whether the latest completed poll of the target (seen under its lease, so no other poller
 * moves the marks meanwhile) answers for a caller who began asking at `begun`, read `jobs`,
 * and finished reading at `listedAt`. It must be the poll whose listing the mark records (a
 * poll that failed after making its mark leaves the completion older than the mark), and it
 * must have covered the jobs as the caller read them: its listing began after the caller's
 * ended, or (when it also completed after the caller began asking) every one of the jobs was
 * written well before its listing began.
 */
async function sharedPollCovers(
  context: ManagerContext,
  listedKey: string,
  lease: { readonly lastCompletedAt: string | null },
  jobs: readonly JobRecord[],
  times: { readonly begun: number; readonly listedAt: number },
): Promise<boolean> {
  if (lease.lastCompletedAt === null) return false;
  const listed = await context.store.tryLease(listedKey, context.leaseTtlMs);
  if (!listed) return false;
  await listed.release();
  if (listed.lastCompletedAt === null) return false;
  const markedAt = Date.parse(listed.lastCompletedAt);
  const completedAt = Date.parse(lease.lastCompletedAt);
  if (!(completedAt > markedAt)) return false;
  // Marks from the future (a process whose wall clock was ahead, another host's on a shared
  // ledger) would cover every later caller until the clock caught up: they answer for no one.
  if (Math.max(markedAt, completedAt) > Date.now() + WRITE_SKEW_MS) return false;
  if (times.listedAt <= markedAt) return true;
  return (
    completedAt > times.begun &&
    jobs.every((job) => Date.parse(job.updatedAt) < markedAt - WRITE_SKEW_MS)
  );
}

/** Find again the jobs whose submitting process died: submitted after all, or failed as interrupted. */
async function recoverSubmits(
  context: ManagerContext,
  backend: BackendV1,
  jobs: JobRecord[],
  backendContext: BackendContextV1,
): Promise<Map<string, JobRecord>> {
  const updated = new Map<string, JobRecord>();
  // A submit whose process is still alive is in progress; leave it alone.
  const orphans = jobs.filter((job) => job.submitter === null || !isProcessAlive(job.submitter));
  if (orphans.length === 0) return updated;
  const interrupted = (current: JobRecord): JobRecord =>
    transition(
      { ...current, submitter: null },
      'failed',
      { source: 'recover', reason: 'submit-interrupted', failureKind: 'infrastructure' },
      context.now(),
    );
  if (!backend.capabilities.recoverSubmit || !backend.recover) {
    for (const job of orphans)
      updated.set(job.id, await context.store.updateJob(job.id, interrupted));
    return updated;
  }
  let found: ReadonlyMap<string, SubmitResultV1 | null>;
  try {
    found = await backend.recover(
      orphans.map((job) => submitRequest(job, {})),
      backendContext,
    );
  } catch (error) {
    const failure = toYonderError(error, 'E_TRANSPORT').toJSON();
    for (const job of orphans) {
      updated.set(
        job.id,
        await context.store.updateJob(job.id, (current) => ({ ...current, error: failure })),
      );
    }
    return updated;
  }
  for (const job of orphans) {
    if (!found.has(job.id)) continue;
    const result = found.get(job.id);
    const record = await context.store.updateJob(job.id, (current) => {
      if (current.state !== 'submitting') return undefined;
      return result
        ? applySubmitResult(current, result, 'recover', context.now())
        : interrupted(current);
    });
    updated.set(job.id, record);
  }
  return updated;
}

/** One poll for every job of a target; the rules decide what each observation changes. */
async function pollJobs(
  context: ManagerContext,
  backend: BackendV1,
  jobs: JobRecord[],
  backendContext: BackendContextV1,
): Promise<JobRecord[]> {
  if (jobs.length === 0) return [];
  let observations: ReadonlyMap<string, ObservationV1>;
  try {
    observations = await backend.poll(
      jobs.map((job) => backendJob(job, backend)),
      backendContext,
    );
  } catch (error) {
    const failure = toYonderError(error, 'E_SCHEDULER_UNAVAILABLE');
    observations = new Map(
      jobs.map(
        (job) =>
          [job.id, { kind: 'query-failed', source: backend.id, error: failure.toJSON() }] as const,
      ),
    );
  }
  const policy: StatePolicy = {
    ...context.policy,
    absentGraceMs: Math.max(
      context.policy.absentGraceMs ?? 0,
      (backend.capabilities.absentGraceSeconds ?? 0) * 1000,
    ),
  };
  const now = context.now();
  return Promise.all(
    jobs.map(async (job) => {
      const observation: ObservationV1 = observations.get(job.id) ?? {
        kind: 'query-failed',
        source: backend.id,
        error: {
          code: 'E_INTERNAL',
          message: `The ${backend.id} backend returned nothing for this job.`,
        },
      };
      // Most polls change nothing: write only when the rules say something changed.
      if (unchanged(job, applyObservation(job, observation, now, policy))) return job;
      return context.store.updateJob(job.id, (current) => {
        const next = applyObservation(current, observation, now, policy);
        return unchanged(current, next) ? undefined : next;
      });
    }),
  );
}

/** Cancel, with reason `pending-timeout`, every job pending longer than its profile allows. */
async function enforcePendingTimeouts(
  context: ManagerContext,
  backend: BackendV1,
  jobs: readonly JobRecord[],
  backendContext: BackendContextV1,
): Promise<void> {
  const now = context.now();
  const expired: JobRecord[] = [];
  for (const job of jobs) {
    const limit = job.profileSnapshot.pendingTimeoutSeconds;
    if (job.state !== 'pending' || job.cancel || !limit || !job.pendingSince) continue;
    if (now.getTime() - Date.parse(job.pendingSince) < limit * 1000) continue;
    expired.push(
      await context.store.updateJob(job.id, (current) =>
        current.cancel || current.state !== 'pending'
          ? undefined
          : {
              ...current,
              cancel: {
                requestedAt: now.toISOString(),
                reason: 'pending-timeout',
                lastSentAt: null,
                reachedAt: null,
              },
            },
      ),
    );
  }
  await sendCancel(context, backend, expired, backendContext, false);
}
