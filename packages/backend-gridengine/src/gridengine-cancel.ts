/** Cancel: one qdel for the jobs of a target. */
import type { BackendContextV1, BackendJobV1, CancelOutcomeV1 } from '@yonder/core';
import { chunks, commandFailure } from '@yonder/core/backend-kit';
import { CANCEL_TIMEOUT_MS, gridEngineCommand, QUERY_CHUNK } from './gridengine-command.js';

/**
 * Ask Grid Engine to delete the jobs (those with an id): `sent` when qdel registered or did
 * the deletion, `not-running` when it no longer knows the job (it ended meanwhile), `failed`
 * with qdel's complaint otherwise.
 */
export async function gridEngineCancel(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1,
): Promise<Map<string, CancelOutcomeV1>> {
  const out = new Map<string, CancelOutcomeV1>();
  for (const chunk of chunks(
    jobs.filter((job) => job.externalId !== null),
    QUERY_CHUNK,
  )) {
    const result = await gridEngineCommand(
      context,
      ['qdel', ...chunk.map((job) => job.externalId as string)],
      CANCEL_TIMEOUT_MS,
    );
    // qdel answers on stdout, one line per job: "root has registered the job 8 for deletion",
    // "root has deleted job 9", "denied: job "99" does not exist".
    const text = `${result.stdout}\n${result.stderr}`;
    for (const job of chunk) {
      const id = job.externalId as string;
      if (
        new RegExp(
          `(registered the job ${id} for deletion|deleted job ${id}\\b|job ${id} is already in deletion)`,
        ).test(text)
      )
        out.set(job.id, { kind: 'sent' });
      else if (new RegExp(`job "${id}" does not exist`).test(text))
        out.set(job.id, { kind: 'not-running' });
      else
        out.set(job.id, {
          kind: 'failed',
          error: { code: 'E_CANCEL_FAILED', message: `qdel ${id}: ${commandFailure(result)}` },
        });
    }
  }
  return out;
}
