export {
  applyObservation,
  DEFAULT_STATE_POLICY,
  type StatePolicy,
  type TransitionFields,
  transition,
} from './apply-observation.js';
export { isActive, isJobState, isTerminal, JOB_STATES, TERMINAL_STATES } from './job-states.js';
export { type NormalisedState, normaliseState, type StateDialect } from './normalise-state.js';
