/** How `rm` and `prune` report what they forgot: one line per job on stdout, what was left on a target on stderr, or one JSON document. */
import type { JobManager } from '@yonder/core';
import { envelope, type Io } from '../../output.js';

/** What became of one job `rm` or `prune` was asked to forget. */
type ForgetResult = Awaited<ReturnType<JobManager['forget']>>[number];

/** Print the results; the exit status is 1 when a job's files could not be removed. */
export function printForgotten(io: Io, results: readonly ForgetResult[], json: boolean): number {
  const left = results.filter((result) => result.files === 'failed' || result.files === 'kept');
  if (json) {
    io.stdout(envelope(results));
    return left.length > 0 ? 1 : 0;
  }
  for (const result of results) {
    const what =
      result.files === 'dry-run'
        ? 'would be removed'
        : result.removed
          ? 'removed'
          : 'was not in the ledger';
    io.stdout(`${result.id} ${what}\n`);
    if (result.files === 'failed' || result.files === 'kept')
      io.stderr(
        `yonder: warning: ${result.id}: its files were left on its target: ${result.message}\n`,
      );
    else if (result.files === 'unsupported')
      io.stderr(`yonder: note: ${result.id}: ${result.message}\n`);
  }
  return left.length > 0 ? 1 : 0;
}
