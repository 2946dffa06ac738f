/** Cancel requests: remembered in the ledger, sent to the backend in one call per target, repeated (forcefully after the grace period) until the job is terminal. */
import { toYonderError } from '../errors/yonder-error.js';
import type {
  BackendContextV1,
  BackendV1,
  CancelOutcomeV1,
} from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import { isTerminal } from '../state/job-states.js';
import { cancelWaiting, isWaiting, settleWaitingJobs } from './dependencies.js';
import { jobRoute } from './job-route.js';
import { backendJob, type ManagerContext } from './manager-context.js';
import { releaseHeldJobs } from './submit-jobs.js';

/**
 * Remember a user's request to stop each job that is not terminal yet, and send it at once
 * to every target that has the job.
 */
export async function requestCancel(
  context: ManagerContext,
  jobs: readonly JobRecord[],
): Promise<void> {
  const requested: JobRecord[] = [];
  for (const job of jobs) {
    if (isTerminal(job.state)) continue;
    requested.push(
      await context.store.updateJob(job.id, (current) =>
        isTerminal(current.state) || current.cancel?.reason === 'user'
          ? undefined
          : isWaiting(current)
            ? // Held back by yonder, sent nowhere yet: nothing to stop but the wait.
              cancelWaiting(current, context.now())
            : {
                ...current,
                cancel: {
                  requestedAt: context.now().toISOString(),
                  reason: 'user',
                  lastSentAt: null,
                  reachedAt: current.cancel?.reachedAt ?? null,
                  confirmedAt: current.cancel?.confirmedAt ?? null,
                },
              },
      ),
    );
  }
  const byTarget = new Map<string, JobRecord[]>();
  for (const job of requested) {
    if (job.externalId === null || isTerminal(job.state)) continue;
    const key = jobRoute(job);
    byTarget.set(key, [...(byTarget.get(key) ?? []), job]);
  }
  for (const group of byTarget.values()) {
    const first = group[0] as JobRecord;
    const backend = await context.resolveBackend(first.backend, first.profileSnapshot);
    await sendCancel(
      context,
      backend,
      group,
      await context.backendContext(first.profileSnapshot, backend),
      false,
    );
  }
  // A cancelled parent (or one stopped while it waited) settles the dependents that wanted it
  // to succeed, at once; the others follow its end.
  await settleWaitingJobs(context, (held) => releaseHeldJobs(context, held));
}

/** How long after a polite cancel was sent it is not sent again (the forceful one is not held back). */
export const CANCEL_REPEAT_MS = 5_000;

/** Send the remembered requests again: politely, or forcefully once the profile's grace period is over. */
export async function repeatCancels(
  context: ManagerContext,
  backend: BackendV1,
  jobs: readonly JobRecord[],
  backendContext: BackendContextV1,
): Promise<void> {
  if (jobs.length === 0) return;
  const now = context.now().getTime();
  const force = (job: JobRecord): boolean => {
    const grace = (job.profileSnapshot.cancelGraceSeconds ?? 10) * 1000;
    return job.cancel !== null && now - Date.parse(job.cancel.requestedAt) >= grace;
  };
  // The polite request is repeated at most once per repeat interval: a cancel followed at once
  // by the refresh that waits for it sends one signal (one scancel), not two.
  const sentLately = (job: JobRecord): boolean =>
    job.cancel?.lastSentAt != null && now - Date.parse(job.cancel.lastSentAt) < CANCEL_REPEAT_MS;
  await sendCancel(
    context,
    backend,
    jobs.filter((job) => !force(job) && !sentLately(job)),
    backendContext,
    false,
  );
  await sendCancel(context, backend, jobs.filter(force), backendContext, true);
}

/** One cancel call for jobs of one target; records when it was sent, or why it failed. */
export async function sendCancel(
  context: ManagerContext,
  backend: BackendV1,
  jobs: readonly JobRecord[],
  backendContext: BackendContextV1,
  force: boolean,
): Promise<void> {
  if (jobs.length === 0) return;
  // Written before the send, so a process killed in the middle of it (or a send whose answer
  // is lost) still leaves the mark: whatever the signal made a job do happened after this.
  // `lastSentAt` too, so another process's refresh does not repeat this send while it is on its
  // way, and a send's "nothing was running" can tell whether another began after it.
  const sentAt = context.now().toISOString();
  const unmarked = (job: JobRecord): boolean =>
    job.cancel !== null && (job.cancel.reachedAt ?? null) === null;
  for (const job of jobs) {
    await context.store.updateJob(job.id, (current) =>
      current.cancel
        ? {
            ...current,
            cancel: {
              ...current.cancel,
              lastSentAt: sentAt,
              ...(unmarked(current) ? { reachedAt: sentAt } : {}),
            },
          }
        : undefined,
    );
  }
  let outcomes: ReadonlyMap<string, CancelOutcomeV1>;
  let answered = true;
  try {
    outcomes = await backend.cancel(
      jobs.map((job) => backendJob(job, backend)),
      backendContext,
      { force },
    );
  } catch (error) {
    answered = false;
    const failure = toYonderError(error, 'E_CANCEL_FAILED').toJSON();
    outcomes = new Map(jobs.map((job) => [job.id, { kind: 'failed', error: failure } as const]));
  }
  const at = context.now().toISOString();
  for (const job of jobs) {
    const outcome = outcomes.get(job.id);
    await context.store.updateJob(job.id, (current) => {
      if (!current.cancel) return undefined;
      // The target's own answer that this send reached nothing running (`not-running`: the job
      // had ended before it arrived; `failed`: it could not be signalled) takes this send's mark
      // back, so the job keeps its own outcome — unless another send (another yonder process's,
      // racing this one) was answered that it reached the job, or began after this one (its
      // answer still to come): the job may have ended of that one. A send answered `sent`
      // confirms the mark, setting it if a take-back cleared it. A send that got no answer may
      // have reached the job: its mark stays.
      const missed = outcome?.kind === 'not-running' || (answered && outcome?.kind === 'failed');
      const confirmed = (current.cancel.confirmedAt ?? null) !== null;
      const laterSend =
        current.cancel.lastSentAt != null &&
        Date.parse(current.cancel.lastSentAt) > Date.parse(sentAt);
      let cancel = current.cancel;
      if (outcome?.kind === 'sent')
        cancel = {
          ...cancel,
          reachedAt: cancel.reachedAt ?? sentAt,
          confirmedAt: cancel.confirmedAt ?? at,
        };
      else if (missed && !confirmed && !laterSend && cancel.reachedAt === sentAt)
        cancel = { ...cancel, reachedAt: null };
      if (outcome?.kind === 'failed' && outcome.error)
        return { ...current, cancel, error: outcome.error };
      return { ...current, cancel: { ...cancel, lastSentAt: at } };
    });
  }
}
