/** Recovery of interrupted submits: find the Slurm jobs by the names yonder gave them before anything is sent again. */
import type { BackendContextV1, SubmitRequestV1, SubmitResultV1 } from '@yonder/core';
import { parseExternalId } from '@yonder/core/backend-kit';
import { slurmJobName } from './sbatch-options.js';
import {
  chunks,
  QUERY_CHUNK,
  sacctRows,
  schedulerUnavailable,
  squeueRows,
} from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';
import { slurmProbe, slurmWorkdir } from './slurm-probe.js';
import { slurmJobData } from './slurm-submit.js';

/**
 * For each request: the job Slurm has under its name, or null when Slurm has none and the
 * request is older than `submitGraceSeconds` (a submit that recent may still be in flight,
 * so it is left out).
 * @throws YonderError `E_SCHEDULER_UNAVAILABLE` when squeue or sacct does not answer.
 */
export async function slurmRecover(
  requests: readonly SubmitRequestV1[],
  context: BackendContextV1<SlurmOptions>,
  submitGraceSeconds: number,
): Promise<Map<string, SubmitResultV1 | null>> {
  const out = new Map<string, SubmitResultV1 | null>();
  const first = requests[0];
  if (!first) return out;
  const { options } = context;
  const names = requests.map((request) => slurmJobName(request.id, request.name));
  const report = await slurmProbe(first.profile, options, context, false);
  const found = await findByName(
    context,
    options,
    names,
    requests.map((request) => request.createdAt),
  );
  requests.forEach((request, index) => {
    const name = names[index] as string;
    const hit = found.get(name);
    if (hit) {
      const jobDir = `${slurmWorkdir(request.profile, report)}/${request.id}`;
      out.set(request.id, {
        externalId: parseExternalId(hit.id).id,
        state: 'pending',
        nativeState: hit.state,
        data: slurmJobData(jobDir, name, request.marker),
      });
    } else if (Date.now() - Date.parse(request.createdAt) > submitGraceSeconds * 1000) {
      out.set(request.id, null);
    }
  });
  return out;
}

/** Look jobs up by their Slurm job names: squeue first, sacct for the names it does not list. */
async function findByName(
  context: BackendContextV1,
  options: SlurmOptions,
  names: readonly string[],
  createdAt: readonly string[],
): Promise<Map<string, { id: string; state: string }>> {
  const found = new Map<string, { id: string; state: string }>();
  for (const chunk of chunks(names, QUERY_CHUNK)) {
    // Only the user's own jobs: a name shows in every user's `ps` while sbatch runs, so another
    // user can submit a job of the same name (sacct lists only the user's own by default).
    const queue = await squeueRows(context, options, [
      '--noheader',
      '--me',
      '--all',
      '--states=all',
      `--name=${chunk.join(',')}`,
    ]);
    for (const row of queue) found.set(row.name, { id: row.jobId, state: row.state });
    const missing = chunk.filter((name) => !found.has(name));
    if (missing.length === 0) continue;
    const { result, rows } = await sacctRows(
      context,
      options,
      `--name=${missing.join(',')}`,
      createdAt,
    );
    if (rows === null) throw schedulerUnavailable('sacct', result);
    for (const row of rows)
      if (!found.has(row.name)) found.set(row.name, { id: row.jobId, state: row.state });
  }
  return found;
}
