import { signalName } from '../process/signal-names.js';
import type { ObservationV1 } from '../spec/backend/v1/backend-v1.js';

/**
 * An exit status, as a job's wrapper recorded it, as an observation. A status above 128 is
 * what a shell reports for a job killed by a signal, and also what a job that exits with it by
 * itself leaves (`exit 137`): the status alone cannot tell them apart, so it is reported as
 * the exit code it is, with the signal named as a possibility in the reason only, never as the
 * job's `signal`.
 */
export function exitObservation(code: number, source: string): ObservationV1 {
  if (code === 0)
    return { kind: 'found', state: 'succeeded', nativeState: 'exited 0', exitCode: 0, source };
  const asSignal = code > 128 && code < 128 + 65 ? signalName(code - 128) : null;
  return {
    kind: 'found',
    state: 'failed',
    nativeState: `exited ${code}`,
    exitCode: code,
    signal: null,
    failureKind: 'application',
    reason: asSignal ? `exit code ${code} (or killed by ${asSignal})` : `exit code ${code}`,
    source,
  };
}
