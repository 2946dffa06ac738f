/** The state rules for a late cancel (the true end wins) and for reasons (never replaced by weaker ones). */
import { describe, expect, it } from 'vitest';
import { sampleJob } from '../conformance/store-conformance.js';
import type { ObservationV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import { applyObservation } from './apply-observation.js';
import { absent, found, T1, T2, timeoutCancel } from './observation-samples.js';

describe('the true end wins over a late cancel', () => {
  const requested = '2030-01-01T00:00:30.000Z';
  const reached = '2030-01-01T00:00:30.100Z';
  const lateCancel = (reachedAt: string | null | undefined): JobRecord['cancel'] => ({
    requestedAt: requested,
    reason: 'user',
    lastSentAt: reached,
    ...(reachedAt === undefined ? {} : { reachedAt }),
  });

  it.each([
    ['exited 0', found('succeeded', 'exited 0', { exitCode: 0 }), 'succeeded'],
    [
      'was killed by SIGTERM from elsewhere',
      found('failed', 'killed by SIGTERM', { exitCode: 143, signal: 'SIGTERM' }),
      'failed',
    ],
  ] as const)(
    'a job that %s before the cancel was asked for keeps that outcome',
    (_what, observation, state) => {
      const job = applyObservation(
        sampleJob({ state: 'running', cancel: lateCancel(reached) }),
        { ...observation, endedAt: '2030-01-01T00:00:29.500Z' } as ObservationV1,
        T1,
      );
      expect(job).toMatchObject({ state, finishedAt: '2030-01-01T00:00:29.500Z' });
      expect(job.history.at(-1)).toMatchObject({ to: state });
    },
  );

  it('a job that exited 0 after the request but before the cancel reached it keeps succeeded', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: lateCancel(reached) }),
      found('succeeded', 'exited 0', { exitCode: 0, endedAt: '2030-01-01T00:00:30.050Z' }),
      T1,
    );
    expect(job).toMatchObject({ state: 'succeeded', exitCode: 0, failureKind: null });
  });

  it.each([
    ['the second the cancel reached it in', '2030-01-01T00:00:30.000Z', 'cancelled'],
    ['the second before', '2030-01-01T00:00:29.000Z', 'failed'],
  ] as const)(
    'an end recorded in whole seconds (no date +%%N there), in %s: %s',
    (_what, endedAt, state) => {
      // Found through a busybox container: the TERM of the cancel, recorded as ended 30.000,
      // was taken for an end before the cancel reached the job at 30.100.
      const job = applyObservation(
        sampleJob({ state: 'running', cancel: lateCancel(reached) }),
        found('failed', 'killed by SIGTERM', { exitCode: 143, signal: 'SIGTERM', endedAt }),
        T1,
      );
      expect(job.state).toBe(state);
    },
  );

  it('a cancel that never reached the running job (the target said not running) leaves its outcome', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: lateCancel(null) }),
      found('succeeded', 'exited 0', { exitCode: 0 }),
      T1,
    );
    expect(job.state).toBe('succeeded');
  });

  it('a target that says the job ended on its own is believed whatever the times', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: lateCancel(reached) }),
      found('succeeded', 'COMPLETED', {
        exitCode: 0,
        source: 'sacct',
        endedOnItsOwn: true,
        endedAt: '2030-01-01T00:00:31.000Z',
      }),
      T1,
    );
    expect(job).toMatchObject({ state: 'succeeded', reason: null });
  });

  it('a job that exits 0 after the cancel reached it (it trapped the signal) is cancelled', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: lateCancel(reached) }),
      found('succeeded', 'exited 0', { exitCode: 0, endedAt: '2030-01-01T00:00:30.200Z' }),
      T1,
    );
    expect(job).toMatchObject({ state: 'cancelled', reason: 'cancelled', exitCode: 0 });
  });

  it('what the target reports as cancelled stays cancelled, even if it says so on its own', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: lateCancel(null) }),
      found('cancelled', 'CANCELLED by 0', { endedOnItsOwn: true }),
      T1,
    );
    expect(job.state).toBe('cancelled');
  });

  it('a pending-timeout cancel that a job outran leaves its own failure', () => {
    const job = applyObservation(
      sampleJob({
        state: 'running',
        cancel: {
          ...timeoutCancel(),
          reachedAt: '2030-01-01T00:00:30.000Z',
        } as JobRecord['cancel'],
      }),
      found('failed', 'killed by SIGTERM', {
        exitCode: 143,
        signal: 'SIGTERM',
        endedAt: '2030-01-01T00:00:10.000Z',
      }),
      T1,
    );
    expect(job).toMatchObject({ state: 'failed', reason: null, failureKind: 'application' });
  });
});

describe('reasons are not replaced by weaker ones', () => {
  /** A job squeue has seen pending for Priority. */
  const waitingForPriority = () =>
    applyObservation(
      sampleJob({ state: 'submitting' }),
      found('pending', 'PENDING', { reason: 'Priority' }),
      T1,
    );

  const revoked = 'revoked (the job started on another cluster of the federation)';

  it('an unknown state keeps the backend’s own reason (REVOKED)', () => {
    const job = applyObservation(
      sampleJob({ state: 'running' }),
      found('unknown', 'REVOKED', { reason: revoked }),
      T1,
    );
    expect(job).toMatchObject({ state: 'unknown', reason: revoked });
  });

  it('a later sighting of the same state without a reason keeps the recorded one', () => {
    let job = applyObservation(
      sampleJob({ state: 'running' }),
      found('unknown', 'REVOKED', { reason: revoked }),
      T1,
    );
    job = applyObservation(job, found('unknown', 'REVOKED', { source: 'sacct' }), T2);
    expect(job.reason).toBe(revoked);
    job = applyObservation(job, absent, T2);
    expect(job.reason).toBe(revoked);
    const pending = applyObservation(
      waitingForPriority(),
      found('pending', 'PENDING', { source: 'sacct' }),
      T2,
    );
    expect(pending.reason).toBe('Priority');
  });

  it('a change of state, or a new reason, replaces it', () => {
    let job = applyObservation(
      waitingForPriority(),
      found('pending', 'PENDING', { reason: 'Resources' }),
      T1,
    );
    expect(job.reason).toBe('Resources');
    job = applyObservation(job, found('running', 'RUNNING'), T2);
    expect(job.reason).toBeNull();
  });
});
