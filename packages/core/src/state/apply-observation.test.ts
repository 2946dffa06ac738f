import { describe, expect, it } from 'vitest';
import { sampleJob } from '../conformance/store-conformance.js';
import type { JobState } from '../spec/job.js';
import { applyObservation, DEFAULT_STATE_POLICY, transition } from './apply-observation.js';
import {
  absent,
  found,
  queryFailed,
  T0,
  T1,
  T2,
  timeoutCancel,
  userCancel,
} from './observation-samples.js';

describe('a failed query', () => {
  it.each([['pending'], ['running'], ['unknown'], ['submitting']] as Array<[JobState]>)(
    'never changes a %s job, only its error',
    (state) => {
      const job = sampleJob({ state, nativeState: 'X', misses: 1, pendingSince: T0.toISOString() });
      const next = applyObservation(job, queryFailed, T1);
      expect(next).toEqual({
        ...job,
        error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'slurmctld is down' },
      });
    },
  );

  it('neither counts as a miss nor resets the misses', () => {
    let job = sampleJob({ state: 'running' });
    job = applyObservation(job, absent, T0);
    job = applyObservation(job, queryFailed, T1);
    expect(job.misses).toBe(1);
    job = applyObservation(job, absent, T2);
    expect(job.misses).toBe(2);
    expect(job.state).toBe('running');
  });

  it('does not modify the record it was given', () => {
    const job = sampleJob({ state: 'running' });
    const copy = structuredClone(job);
    applyObservation(job, queryFailed, T1);
    applyObservation(job, found('succeeded', 'COMPLETED', { exitCode: 0 }), T1);
    expect(job).toEqual(copy);
  });
});

describe('an absent job', () => {
  it(`is tolerated maxMisses-1 times (default ${DEFAULT_STATE_POLICY.maxMisses}), then failed as lost`, () => {
    let job = sampleJob({
      state: 'running',
      nativeState: 'RUNNING',
      error: { code: 'E_X', message: 'm' },
    });
    for (let miss = 1; miss < DEFAULT_STATE_POLICY.maxMisses; miss += 1) {
      job = applyObservation(job, absent, T1);
      expect(job.state).toBe('running');
      expect(job.misses).toBe(miss);
      expect(job.error).toBeNull();
      expect(job.history).toEqual([]);
    }
    job = applyObservation(job, absent, T2);
    expect(job).toMatchObject({
      state: 'failed',
      reason: 'lost',
      failureKind: 'infrastructure',
      finishedAt: T2.toISOString(),
      exitCode: null,
      signal: null,
      nativeState: 'RUNNING',
    });
    expect(job.history).toEqual([
      {
        at: T2.toISOString(),
        from: 'running',
        to: 'failed',
        source: 'squeue',
        nativeState: 'RUNNING',
        reason: 'lost',
      },
    ]);
  });

  it('follows the policy’s maxMisses', () => {
    const job = sampleJob({ state: 'running' });
    expect(applyObservation(job, absent, T1, { maxMisses: 1 }).state).toBe('failed');
    let slow = job;
    for (let miss = 0; miss < 9; miss += 1)
      slow = applyObservation(slow, absent, T1, { maxMisses: 10 });
    expect(slow.state).toBe('running');
    expect(applyObservation(slow, absent, T1, { maxMisses: 10 }).state).toBe('failed');
  });

  it('is cancelled, not lost, when the user asked for a cancel', () => {
    let job = sampleJob({ state: 'running', cancel: userCancel() });
    for (let miss = 0; miss < 3; miss += 1) job = applyObservation(job, absent, T1);
    expect(job).toMatchObject({ state: 'cancelled', reason: 'cancelled', failureKind: null });
    expect(job.history.at(-1)).toMatchObject({
      from: 'running',
      to: 'cancelled',
      source: 'squeue',
    });
  });

  // BUG (apply-observation.ts, absent branch): only a *user* cancel is considered. A job that
  // yonder cancelled for its pending timeout and that then vanishes is reported `lost`,
  // hiding that the pending timeout ended it (a found CANCELLED gives `pending-timeout`).
  it('fails with reason pending-timeout, not lost, after a pending-timeout cancel', () => {
    let job = sampleJob({ state: 'pending', cancel: timeoutCancel() });
    for (let miss = 0; miss < 3; miss += 1) job = applyObservation(job, absent, T1);
    expect(job).toMatchObject({
      state: 'failed',
      reason: 'pending-timeout',
      failureKind: 'infrastructure',
    });
  });

  it('is forgiven by a later sighting: a found observation resets the misses and the error', () => {
    let job = sampleJob({ state: 'running', nativeState: 'RUNNING' });
    job = applyObservation(job, absent, T0);
    job = applyObservation(job, absent, T0);
    job = applyObservation(job, queryFailed, T0);
    job = applyObservation(job, found('running', 'RUNNING'), T1);
    expect(job.misses).toBe(0);
    expect(job.error).toBeNull();
    job = applyObservation(job, absent, T2);
    job = applyObservation(job, absent, T2);
    expect(job.state).toBe('running');
  });
});

describe('terminal states are final', () => {
  it.each([['succeeded'], ['failed'], ['cancelled']] as Array<[JobState]>)(
    'a %s job is returned as the same object whatever is observed',
    (state) => {
      const job = sampleJob({ state, nativeState: 'DONE', finishedAt: T0.toISOString() });
      for (const observation of [
        queryFailed,
        absent,
        found('running', 'RUNNING'),
        found('failed', 'FAILED', { exitCode: 1 }),
        found('succeeded', 'COMPLETED', { exitCode: 0 }),
        found('unknown', 'WEIRD'),
      ]) {
        expect(applyObservation(job, observation, T1, { maxMisses: 1 })).toBe(job);
      }
    },
  );

  it('transition() leaves a terminal job as it is', () => {
    const job = sampleJob({ state: 'failed' });
    expect(transition(job, 'running', { source: 'x' }, T1)).toBe(job);
  });
});

describe('history', () => {
  it('records from, to, source, native state, reason and time of each change', () => {
    let job = sampleJob({ state: 'submitting' });
    job = applyObservation(job, found('pending', 'PENDING', { reason: 'Priority' }), T0);
    job = applyObservation(job, found('running', 'RUNNING', { source: 'sacct' }), T1);
    job = applyObservation(
      job,
      found('succeeded', 'COMPLETED', { exitCode: 0, source: 'sacct' }),
      T2,
    );
    expect(job.history).toEqual([
      {
        at: T0.toISOString(),
        from: 'submitting',
        to: 'pending',
        source: 'squeue',
        nativeState: 'PENDING',
        reason: 'Priority',
      },
      {
        at: T1.toISOString(),
        from: 'pending',
        to: 'running',
        source: 'sacct',
        nativeState: 'RUNNING',
      },
      {
        at: T2.toISOString(),
        from: 'running',
        to: 'succeeded',
        source: 'sacct',
        nativeState: 'COMPLETED',
      },
    ]);
  });

  it('records a change of native state within the same state', () => {
    let job = sampleJob({ state: 'running', nativeState: 'RUNNING' });
    job = applyObservation(job, found('running', 'COMPLETING'), T1);
    expect(job.nativeState).toBe('COMPLETING');
    expect(job.history).toEqual([
      {
        at: T1.toISOString(),
        from: 'running',
        to: 'running',
        source: 'squeue',
        nativeState: 'COMPLETING',
      },
    ]);
  });

  it('records nothing when neither the state nor the native state changed', () => {
    let job = sampleJob({ state: 'running', nativeState: 'RUNNING' });
    job = applyObservation(job, found('running', 'RUNNING'), T1);
    job = applyObservation(job, found('running', 'RUNNING'), T2);
    expect(job.history).toEqual([]);
  });
});

describe('cancel requests', () => {
  it.each([
    ['ends CANCELLED', found('cancelled', 'CANCELLED')],
    ['completes cleanly', found('succeeded', 'COMPLETED', { exitCode: 0 })],
    ['dies of SIGTERM', found('failed', 'FAILED', { signal: 'SIGTERM' })],
    ['dies of SIGKILL', found('failed', 'FAILED', { signal: 'SIGKILL' })],
    ['exits 143', found('failed', 'FAILED', { exitCode: 143 })],
    ['exits 137', found('failed', 'FAILED', { exitCode: 137 })],
  ])('a user-cancelled job that %s is cancelled', (_what, observation) => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: userCancel() }),
      observation,
      T1,
    );
    expect(job.state).toBe('cancelled');
    expect(job.failureKind).toBeNull();
    expect(job.reason).toBe('cancelled');
    expect(job.finishedAt).toBe(T1.toISOString());
  });

  it('keeps the backend’s own reason for a cancelled job', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: userCancel() }),
      found('cancelled', 'CANCELLED by 1000', { reason: 'cancelled by user 1000' }),
      T1,
    );
    expect(job).toMatchObject({ state: 'cancelled', reason: 'cancelled by user 1000' });
  });

  it('a user-cancelled job that fails on its own with exit 1 is failed', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: userCancel() }),
      found('failed', 'FAILED', { exitCode: 1, reason: 'exit code 1' }),
      T1,
    );
    expect(job).toMatchObject({
      state: 'failed',
      exitCode: 1,
      failureKind: 'application',
      reason: 'exit code 1',
    });
  });

  it('a user cancel does not end a job that is still running', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: userCancel() }),
      found('running', 'RUNNING'),
      T1,
    );
    expect(job.state).toBe('running');
  });

  it.each([
    ['ends CANCELLED', found('cancelled', 'CANCELLED')],
    ['dies of SIGTERM', found('failed', 'FAILED', { signal: 'SIGTERM' })],
    ['exits 143', found('failed', 'FAILED', { exitCode: 143 })],
  ])(
    'a pending-timeout-cancelled job that %s fails with reason pending-timeout',
    (_what, observation) => {
      const job = applyObservation(
        sampleJob({ state: 'pending', cancel: timeoutCancel() }),
        observation,
        T1,
      );
      expect(job).toMatchObject({
        state: 'failed',
        reason: 'pending-timeout',
        failureKind: 'infrastructure',
        finishedAt: T1.toISOString(),
      });
      expect(job.history.at(-1)).toMatchObject({ to: 'failed', reason: 'pending-timeout' });
    },
  );

  it('a pending-timeout-cancelled job that completed after all stays succeeded', () => {
    const job = applyObservation(
      sampleJob({ state: 'running', cancel: timeoutCancel() }),
      found('succeeded', 'COMPLETED', { exitCode: 0 }),
      T1,
    );
    expect(job).toMatchObject({ state: 'succeeded', failureKind: null });
  });
});

describe('unknown native states', () => {
  it('put the job in unknown with a reason quoting the native state', () => {
    const job = applyObservation(
      sampleJob({ state: 'running' }),
      found('unknown', 'WEIRD_NEW_STATE'),
      T1,
    );
    expect(job.state).toBe('unknown');
    expect(job.reason).toContain('"WEIRD_NEW_STATE"');
    expect(job.history.at(-1)).toMatchObject({ to: 'unknown', nativeState: 'WEIRD_NEW_STATE' });
    expect(job.finishedAt).toBeNull();
  });

  it('let the job move on once a known state is seen again', () => {
    let job = applyObservation(sampleJob({ state: 'running' }), found('unknown', 'WEIRD'), T1);
    job = applyObservation(job, found('running', 'RUNNING'), T2);
    expect(job).toMatchObject({ state: 'running', reason: null });
  });
});

describe('pendingSince', () => {
  it('is set when pending begins, kept while pending, and cleared otherwise', () => {
    let job = sampleJob({ state: 'submitting', pendingSince: null });
    job = applyObservation(job, found('pending', 'PENDING'), T0);
    expect(job.pendingSince).toBe(T0.toISOString());
    job = applyObservation(job, found('pending', 'PENDING', { reason: 'Resources' }), T1);
    expect(job.pendingSince).toBe(T0.toISOString());
    job = applyObservation(job, found('pending', 'CONFIGURING'), T1);
    expect(job.pendingSince).toBe(T0.toISOString());
    job = applyObservation(job, absent, T2);
    expect(job.pendingSince).toBe(T0.toISOString());
    job = applyObservation(job, found('running', 'RUNNING'), T2);
    expect(job.pendingSince).toBeNull();
  });

  it('starts a new spell when a running job is requeued', () => {
    let job = sampleJob({ state: 'running', pendingSince: null });
    job = applyObservation(job, found('pending', 'REQUEUED'), T2);
    expect(job.pendingSince).toBe(T2.toISOString());
  });

  it('is cleared when the job ends', () => {
    const job = applyObservation(
      sampleJob({ state: 'pending', pendingSince: T0.toISOString() }),
      found('failed', 'FAILED', { exitCode: 2 }),
      T1,
    );
    expect(job.pendingSince).toBeNull();
  });
});

describe('terminal fields', () => {
  it('sets finishedAt, exitCode, signal and an application failureKind by default', () => {
    const job = applyObservation(
      sampleJob({ state: 'running' }),
      found('failed', 'FAILED', { exitCode: 2, signal: null, reason: 'exit code 2' }),
      T1,
    );
    expect(job).toMatchObject({
      state: 'failed',
      finishedAt: T1.toISOString(),
      exitCode: 2,
      signal: null,
      failureKind: 'application',
      reason: 'exit code 2',
      misses: 0,
      error: null,
    });
  });

  it('keeps an infrastructure failureKind from the backend', () => {
    const job = applyObservation(
      sampleJob({ state: 'running' }),
      found('failed', 'NODE_FAIL', { failureKind: 'infrastructure' }),
      T1,
    );
    expect(job).toMatchObject({ state: 'failed', failureKind: 'infrastructure', exitCode: null });
  });

  it('records a signal and clears failureKind on success', () => {
    const failed = applyObservation(
      sampleJob({ state: 'running' }),
      found('failed', 'FAILED', { signal: 'SIGSEGV' }),
      T1,
    );
    expect(failed).toMatchObject({ signal: 'SIGSEGV', failureKind: 'application' });
    const ok = applyObservation(
      sampleJob({ state: 'running' }),
      found('succeeded', 'COMPLETED', { exitCode: 0 }),
      T1,
    );
    expect(ok).toMatchObject({
      state: 'succeeded',
      exitCode: 0,
      signal: null,
      failureKind: null,
      finishedAt: T1.toISOString(),
    });
  });

  it('does not set finishedAt for non-terminal states', () => {
    const job = applyObservation(sampleJob({ state: 'pending' }), found('running', 'RUNNING'), T1);
    expect(job.finishedAt).toBeNull();
  });
});

describe('the job’s own times', () => {
  const started = '2030-01-01T00:00:10.250Z';
  const ended = '2030-01-01T00:00:40.500Z';

  it('startedAt comes from the target, is kept once known, and needs no state change', () => {
    const running = sampleJob({ state: 'running', nativeState: 'running' });
    const seen = applyObservation(running, found('running', 'running', { startedAt: started }), T1);
    expect(seen).toMatchObject({ state: 'running', startedAt: started });
    expect(seen.history).toEqual(running.history);
    const later = applyObservation(
      seen,
      found('running', 'running', { startedAt: '2030-01-01T00:00:59.000Z' }),
      T2,
    );
    expect(later.startedAt).toBe(started);
  });

  it('after a requeue (pending again), a later start is the run that counts; the history keeps each start', () => {
    const first = applyObservation(
      sampleJob({ state: 'pending' }),
      found('running', 'RUNNING', { startedAt: started }),
      T1,
    );
    const requeued = applyObservation(first, found('pending', 'PENDING'), T1);
    expect(requeued.startedAt).toBe(started);
    const rerunStart = '2030-01-01T00:02:30.000Z';
    const rerun = applyObservation(
      requeued,
      found('succeeded', 'COMPLETED', {
        exitCode: 0,
        startedAt: rerunStart,
        endedAt: ended.replace('00:00:40', '00:02:45'),
      }),
      T2,
    );
    expect(rerun).toMatchObject({ state: 'succeeded', startedAt: rerunStart });
    expect(Date.parse(rerun.finishedAt as string) - Date.parse(rerun.startedAt as string)).toBe(
      15_500,
    );
    expect(rerun.history.flatMap((entry) => (entry.startedAt ? [entry.startedAt] : []))).toEqual([
      started,
      rerunStart,
    ]);
    // An earlier start reported after the requeue is not a rerun's.
    const stale = applyObservation(
      requeued,
      found('running', 'RUNNING', { startedAt: started }),
      T2,
    );
    expect(stale.startedAt).toBe(started);
  });

  it('finishedAt is the end the target recorded; noticedAt is when yonder saw it', () => {
    const job = applyObservation(
      sampleJob({ state: 'running' }),
      found('succeeded', 'exited 0', { exitCode: 0, startedAt: started, endedAt: ended }),
      T2,
    );
    expect(job).toMatchObject({
      state: 'succeeded',
      startedAt: started,
      finishedAt: ended,
      noticedAt: T2.toISOString(),
    });
    expect(Date.parse(job.finishedAt as string) - Date.parse(job.startedAt as string)).toBe(30_250);
  });

  it('without a recorded end, finishedAt and noticedAt are both when yonder saw it', () => {
    const job = applyObservation(sampleJob({ state: 'running' }), found('failed', 'FAILED'), T1);
    expect(job).toMatchObject({ finishedAt: T1.toISOString(), noticedAt: T1.toISOString() });
    expect(job.startedAt).toBeUndefined();
  });
});
