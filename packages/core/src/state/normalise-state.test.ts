import { describe, expect, it } from 'vitest';
import { normaliseState } from './normalise-state.js';

describe('normaliseState (slurm)', () => {
  it.each([
    ['PENDING', 'pending', null],
    ['PD', 'pending', null],
    ['CONFIGURING', 'pending', null],
    ['REQUEUED', 'pending', null],
    ['REQUEUE_HOLD', 'pending', null],
    ['SPECIAL_EXIT', 'pending', null],
    ['RESV_DEL_HOLD', 'pending', null],
    ['EXPEDITING', 'pending', null],
    ['RUNNING', 'running', null],
    ['R', 'running', null],
    ['SUSPENDED', 'running', null],
    ['STOPPED', 'running', null],
    ['ST', 'running', null],
    ['SIGNALING', 'running', null],
    ['RESIZING', 'running', null],
    ['COMPLETING', 'running', null],
    ['CG', 'running', null],
    ['STAGE_OUT', 'running', null],
    ['COMPLETED', 'succeeded', null],
    ['CD', 'succeeded', null],
    ['FAILED', 'failed', 'application'],
    ['OUT_OF_MEMORY', 'failed', 'application'],
    ['OOM', 'failed', 'application'],
    ['TIMEOUT', 'failed', 'application'],
    ['DEADLINE', 'failed', 'application'],
    ['NODE_FAIL', 'failed', 'infrastructure'],
    ['BOOT_FAIL', 'failed', 'infrastructure'],
    ['PREEMPTED', 'failed', 'infrastructure'],
    ['CANCELLED', 'cancelled', null],
  ] as const)('%s → %s', (native, state, failureKind) => {
    const result = normaliseState(native, 'slurm');
    expect(result.state).toBe(state);
    expect(result.failureKind).toBe(failureKind);
  });

  it('takes REVOKED for not final: in a federation the job runs on a sibling cluster', () => {
    for (const word of ['REVOKED', 'RV'])
      expect(normaliseState(word, 'slurm')).toEqual({
        state: 'unknown',
        failureKind: null,
        reason: 'revoked (the job started on another cluster of the federation)',
        exitCode: null,
      });
  });

  it('keeps who cancelled, and ignores sacct truncation marks and case', () => {
    expect(normaliseState('CANCELLED by 1000', 'slurm')).toMatchObject({
      state: 'cancelled',
      reason: 'cancelled by uid 1000',
    });
    expect(normaliseState('CANCELLED+', 'slurm').state).toBe('cancelled');
    expect(normaliseState('out_of_me+', 'slurm').state).toBe('unknown');
    expect(normaliseState('running', 'slurm').state).toBe('running');
  });

  it('maps words nobody knows, and empty text, to unknown, never a terminal state', () => {
    for (const word of ['?', 'FROBNICATED', '', '   ', 'DONEISH', 'EXIT:abc']) {
      expect(normaliseState(word, 'slurm').state).toBe('unknown');
      expect(normaliseState(word).state).toBe('unknown');
    }
  });
});

describe('normaliseState (generic, the seed table)', () => {
  it.each([
    ['queued', 'pending'],
    ['SUBMITTED', 'pending'],
    ['SCHEDULED', 'pending'],
    ['run', 'running'],
    ['EXECUTING', 'running'],
    ['SUCCESS', 'succeeded'],
    ['done', 'succeeded'],
    ['FAILURE', 'failed'],
    ['DEADLINE_EXCEEDED', 'failed'],
    ['CANCELED', 'cancelled'],
    ['STOPPED', 'cancelled'],
    ['TERMINATED', 'cancelled'],
  ] as const)('%s → %s', (native, state) => {
    expect(normaliseState(native).state).toBe(state);
  });

  it('reads EXIT:<code> as an exit code, and only the first word of the first line', () => {
    expect(normaliseState('EXIT:0')).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect(normaliseState('EXIT:7')).toMatchObject({
      state: 'failed',
      exitCode: 7,
      failureKind: 'application',
    });
    expect(normaliseState('RUNNING since 10:00\nCOMPLETED').state).toBe('running');
  });
});
