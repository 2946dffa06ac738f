import type { FoundObservationV1, ObservationV1 } from '../spec/backend/v1/backend-v1.js';
import type { FailureKind, JobRecord, JobState } from '../spec/job.js';
import { isTerminal } from './job-states.js';

export interface StatePolicy {
  /** Healthy polls in a row that may miss a job before it is declared lost. */
  readonly maxMisses: number;
  /** And the least time, in ms, from the first miss before it is declared lost. */
  readonly absentGraceMs?: number;
}

export const DEFAULT_STATE_POLICY: StatePolicy = { maxMisses: 3, absentGraceMs: 0 };

export interface TransitionFields {
  source: string;
  nativeState?: string | null;
  reason?: string | null;
  exitCode?: number | null;
  signal?: string | null;
  failureKind?: FailureKind | null;
  /** When the job itself started and ended (ISO), as its target recorded them. */
  startedAt?: string;
  endedAt?: string;
}

/**
 * Move a job to `to`, recording the transition. Terminal states are final: a job already in
 * one is returned unchanged. Recording happens when the state or the native state changes.
 */
export function transition(
  job: JobRecord,
  to: JobState,
  fields: TransitionFields,
  now: Date,
): JobRecord {
  if (isTerminal(job.state)) return job;
  const at = now.toISOString();
  const nativeState = fields.nativeState === undefined ? job.nativeState : fields.nativeState;
  const changed = job.state !== to || job.nativeState !== nativeState;
  // The run that counts is the latest: a job that was pending again after it started (a
  // requeue) and reports a later start is a rerun, and its start replaces the first one's.
  const rerun =
    job.state === 'pending' &&
    !!job.startedAt &&
    !!fields.startedAt &&
    Date.parse(fields.startedAt) > Date.parse(job.startedAt);
  const newStart = fields.startedAt && (!job.startedAt || rerun) ? fields.startedAt : undefined;
  const next: JobRecord = {
    ...job,
    state: to,
    nativeState,
    history: changed
      ? [
          ...job.history,
          {
            at,
            from: job.state,
            to,
            source: fields.source,
            nativeState,
            ...(fields.reason ? { reason: fields.reason } : {}),
            ...(newStart ? { startedAt: newStart } : {}),
          },
        ]
      : job.history,
  };
  if (to === 'pending')
    next.pendingSince = job.state === 'pending' && job.pendingSince ? job.pendingSince : at;
  else next.pendingSince = null;
  if (fields.reason !== undefined) next.reason = fields.reason;
  if (newStart) next.startedAt = newStart;
  if (isTerminal(to)) {
    // The job's own end when its target recorded one; when yonder saw it, beside it.
    next.finishedAt = fields.endedAt ?? at;
    next.noticedAt = at;
    next.exitCode = fields.exitCode ?? null;
    next.signal = fields.signal ?? null;
    next.failureKind = to === 'failed' ? (fields.failureKind ?? 'application') : null;
  } else {
    if (fields.exitCode !== undefined) next.exitCode = fields.exitCode;
    if (fields.signal !== undefined) next.signal = fields.signal;
  }
  return next;
}

const CANCEL_SIGNALS = new Set(['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP']);
/** The exit statuses a shell reports for a job killed by the signals a cancel sends. */
const CANCEL_EXIT_STATUSES: Readonly<Record<number, string>> = { 143: 'SIGTERM', 137: 'SIGKILL' };

function diedOfCancelSignal(observation: {
  signal?: string | null;
  exitCode?: number | null;
}): boolean {
  if (observation.signal && CANCEL_SIGNALS.has(observation.signal)) return true;
  return CANCEL_EXIT_STATUSES[observation.exitCode ?? -1] !== undefined;
}

/**
 * Whether the job ended before any cancel of yonder's could have stopped it: the target says
 * it ended on its own (`endedOnItsOwn`), no cancel ever reached it while it ran, or it ended
 * (by the end its target recorded) before the first one that did. Then the true end wins.
 */
function endedBeforeCancel(
  cancel: NonNullable<JobRecord['cancel']>,
  observation: FoundObservationV1,
): boolean {
  if (observation.endedOnItsOwn === true) return true;
  // A record from before `reachedAt` was kept: take the request as the moment it reached the job.
  const reached = cancel.reachedAt === undefined ? cancel.requestedAt : cancel.reachedAt;
  if (reached === null) return true;
  if (!observation.endedAt) return false;
  return latestEnd(observation.endedAt) < Date.parse(reached);
}

/**
 * The latest moment an end the target recorded can have been. A time in whole seconds (a host
 * whose `date` has no `%N`: busybox, BSD, macOS) names a second, any moment of which it may
 * have been; so an end in the second a cancel reached the job is not known to come before it.
 */
function latestEnd(endedAt: string): number {
  const at = Date.parse(endedAt);
  const fraction = /\.(\d+)Z$/.exec(endedAt)?.[1];
  return fraction === undefined || /^0+$/.test(fraction) ? at + 999 : at;
}

/**
 * The rules of a job's life (docs/architecture.md), in one place for every backend:
 * a failed query changes nothing; absence is tolerated for a bounded number of healthy
 * polls, then the job is lost; terminal states are final; a user's cancel that reached the
 * running job is kept when the job then ends cancelled, cleanly, or of the signal sent, while a
 * job that ended before any cancel reached it keeps its own outcome; a pending timeout is a
 * failure; a reason the backend gives is kept over a weaker one.
 */
export function applyObservation(
  job: JobRecord,
  observation: ObservationV1,
  now: Date,
  policy: StatePolicy = DEFAULT_STATE_POLICY,
): JobRecord {
  if (isTerminal(job.state)) return job;
  if (observation.kind === 'query-failed') {
    return { ...job, error: { code: observation.error.code, message: observation.error.message } };
  }
  if (observation.kind === 'absent') {
    const misses = job.misses + 1;
    const absentSince = job.absentSince ?? now.toISOString();
    const base: JobRecord = { ...job, misses, absentSince, error: null };
    if (misses < policy.maxMisses) return base;
    if (now.getTime() - Date.parse(absentSince) < (policy.absentGraceMs ?? 0)) return base;
    if (job.cancel?.reason === 'user') {
      return transition(
        base,
        'cancelled',
        { source: observation.source, reason: 'cancelled' },
        now,
      );
    }
    if (job.cancel?.reason === 'pending-timeout') {
      return transition(
        base,
        'failed',
        { source: observation.source, reason: 'pending-timeout', failureKind: 'infrastructure' },
        now,
      );
    }
    return transition(
      base,
      'failed',
      {
        source: observation.source,
        reason: 'lost',
        failureKind: 'infrastructure',
        nativeState: job.nativeState,
      },
      now,
    );
  }
  const base: JobRecord = { ...job, misses: 0, absentSince: null, error: null };
  let to = observation.state;
  let reason = observation.reason ?? null;
  let failureKind = observation.failureKind ?? null;
  let signal = observation.signal ?? null;
  if (isTerminal(to) && job.cancel) {
    // Ended by a cancel: one the target reports, or one that reached the job before its end.
    const user = job.cancel.reason === 'user';
    const byCancel =
      to === 'cancelled' ||
      (!endedBeforeCancel(job.cancel, observation) &&
        ((user && to === 'succeeded') || (to === 'failed' && diedOfCancelSignal(observation))));
    // An exit status alone does not say a signal killed the job (`exit 143` gives it too); a
    // job that ended with 143 or 137 after the TERM or KILL of a cancel reached it died of it.
    if (byCancel && to === 'failed')
      signal = signal ?? CANCEL_EXIT_STATUSES[observation.exitCode ?? -1] ?? null;
    if (byCancel && user) {
      to = 'cancelled';
      reason = reason ?? 'cancelled';
      failureKind = null;
    } else if (byCancel) {
      to = 'failed';
      reason = 'pending-timeout';
      failureKind = 'infrastructure';
    }
  }
  // A later sighting of the same state that gives no reason keeps the one already recorded
  // (REVOKED's, a pending reason): only a change of state, or a reason given, replaces it.
  const same = job.state === to && job.nativeState === observation.nativeState;
  if (!isTerminal(to) && reason === null && same) reason = job.reason;
  if (to === 'unknown') reason = reason ?? `unrecognised native state "${observation.nativeState}"`;
  return transition(
    base,
    to,
    {
      source: observation.source,
      nativeState: observation.nativeState,
      reason,
      exitCode: observation.exitCode ?? null,
      signal,
      failureKind,
      ...(observation.startedAt ? { startedAt: observation.startedAt } : {}),
      ...(observation.endedAt ? { endedAt: observation.endedAt } : {}),
    },
    now,
  );
}
