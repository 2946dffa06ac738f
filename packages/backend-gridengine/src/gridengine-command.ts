/** How the backend runs a Grid Engine command on the target, and how long each kind may take. */
import type { BackendContextV1, RunResultV1 } from '@yonder/core';
import { RUN_COMMAND } from './scripts.js';

export const QUERY_TIMEOUT_MS = 60_000;
export const CANCEL_TIMEOUT_MS = 120_000;
export const SUBMIT_TIMEOUT_MS = 180_000;
/** At most this many job ids in one command line. */
export const QUERY_CHUNK = 200;

/** Run one Grid Engine command (`qdel`, `qconf`…) in the clean environment of RUN_COMMAND. */
export function gridEngineCommand(
  context: BackendContextV1,
  argv: readonly string[],
  timeoutMs = QUERY_TIMEOUT_MS,
): Promise<RunResultV1> {
  return context.transport.runScript(RUN_COMMAND, argv, { timeoutMs });
}
