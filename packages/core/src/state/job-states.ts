import type { JobState } from '../spec/job.js';

export const JOB_STATES: readonly JobState[] = [
  'submitting',
  'pending',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'unknown',
];

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set(['succeeded', 'failed', 'cancelled']);

/** Terminal states are final: nothing changes a job once it is in one. */
export function isTerminal(state: JobState): boolean {
  return TERMINAL_STATES.has(state);
}

/** Active: anything that can still change (including `unknown`). */
export function isActive(state: JobState): boolean {
  return !TERMINAL_STATES.has(state);
}

export function isJobState(value: unknown): value is JobState {
  return typeof value === 'string' && (JOB_STATES as readonly string[]).includes(value);
}
