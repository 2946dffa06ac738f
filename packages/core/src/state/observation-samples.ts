/** Times, observations and cancel requests the state-rule tests share (test data only). */
import type { FoundObservationV1, ObservationV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord, JobState } from '../spec/job.js';

export const T0 = new Date('2030-01-01T00:00:00.000Z');
export const T1 = new Date('2030-01-01T00:01:00.000Z');
export const T2 = new Date('2030-01-01T00:02:00.000Z');

/** squeue found the job in `state` (its native word `nativeState`), with `extra` fields. */
export function found(
  state: JobState,
  nativeState: string,
  extra: Partial<FoundObservationV1> = {},
): ObservationV1 {
  return { kind: 'found', state, nativeState, source: 'squeue', ...extra };
}

export const absent: ObservationV1 = { kind: 'absent', source: 'squeue' };

export const queryFailed: ObservationV1 = {
  kind: 'query-failed',
  source: 'squeue',
  error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'slurmctld is down' },
};

/** A user's cancel asked for and sent at T0. */
export function userCancel(): JobRecord['cancel'] {
  return { requestedAt: T0.toISOString(), reason: 'user', lastSentAt: T0.toISOString() };
}

/** A pending-timeout cancel asked for and sent at T0. */
export function timeoutCancel(): JobRecord['cancel'] {
  return { requestedAt: T0.toISOString(), reason: 'pending-timeout', lastSentAt: T0.toISOString() };
}
