import { signalName } from '../process/signal-names.js';
import type { ObservationV1 } from '../spec/backend/v1/backend-v1.js';

/** An exit status as an observation. Statuses above 128 are the shell's report of a signal. */
export function exitObservation(code: number, source: string): ObservationV1 {
  if (code === 0)
    return { kind: 'found', state: 'succeeded', nativeState: 'exited 0', exitCode: 0, source };
  const signal = code > 128 && code < 128 + 65 ? signalName(code - 128) : null;
  return {
    kind: 'found',
    state: 'failed',
    nativeState: signal ? `killed by ${signal}` : `exited ${code}`,
    exitCode: code,
    signal,
    failureKind: 'application',
    reason: signal ? `killed by ${signal}` : `exit code ${code}`,
    source,
  };
}
