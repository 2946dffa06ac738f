/** Cancel: one scancel for up to a hundred jobs of the target, each job's outcome read from its answer. */
import type { BackendContextV1, BackendJobV1, CancelOutcomeV1 } from '@yonder/core';
import { CANCEL_TIMEOUT_MS, chunks, commandFailure, slurmCommand } from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';

/** At most this many job ids in one scancel. */
const CANCEL_CHUNK = 100;

/**
 * Ask Slurm to stop the jobs (those with a Slurm id): `sent`, or `failed` with scancel's
 * complaint about that job (or its whole answer when it names no job).
 */
export async function slurmCancel(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1<SlurmOptions>,
): Promise<Map<string, CancelOutcomeV1>> {
  const out = new Map<string, CancelOutcomeV1>();
  const first = jobs[0];
  if (!first) return out;
  const { options } = context;
  for (const chunk of chunks(
    jobs.filter((job) => job.externalId !== null),
    CANCEL_CHUNK,
  )) {
    const result = await slurmCommand(
      context,
      options,
      ['scancel', ...chunk.map((job) => job.externalId as string)],
      CANCEL_TIMEOUT_MS,
    );
    const errors = new Map<string, string>();
    for (const match of result.stderr.matchAll(/Kill job error on job id (\S+): (.*)/g))
      errors.set(match[1] as string, match[2] as string);
    for (const job of chunk) {
      const error = errors.get(job.externalId as string);
      if (error || (result.exitCode !== 0 && errors.size === 0)) {
        out.set(job.id, {
          kind: 'failed',
          error: {
            code: 'E_CANCEL_FAILED',
            message: `scancel ${job.externalId}: ${error ?? commandFailure(result)}`,
          },
        });
      } else {
        out.set(job.id, { kind: 'sent' });
      }
    }
  }
  return out;
}
