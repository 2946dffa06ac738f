/** Poll: one squeue for every job of the target, then sacct and the wrapper's exit-code files for those that left it or finished. */
import type { BackendContextV1, BackendJobV1, ObservationV1, RunResultV1 } from '@yonder/core';
import { EXIT_CODES_SCRIPT, exitObservation, parseExitCodes } from '@yonder/core/backend-kit';
import { type SacctRow, type SqueueRow, slurmObservation } from './parse.js';
import { reconcile } from './reconcile.js';
import { chunks, QUERY_CHUNK, QUERY_TIMEOUT_MS, sacctRows, squeueRows } from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';

/**
 * Observe every given job (all on one target): squeue is asked once for all of them; sacct,
 * once per chunk, for those squeue no longer lists or lists as finished.
 * @throws YonderError `E_SCHEDULER_UNAVAILABLE` when squeue does not answer (every job then
 *   counts as a failed query).
 */
export async function slurmPoll(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1<SlurmOptions>,
): Promise<Map<string, ObservationV1>> {
  const out = new Map<string, ObservationV1>();
  const first = jobs[0];
  if (!first) return out;
  const { options } = context;
  const queue = await squeueRows(context, options, [
    '--me',
    '--all',
    '--noheader',
    '--array',
    '--states=all',
  ]);
  const rows = new Map<string, SqueueRow>();
  for (const row of queue)
    if (row.jobId === row.displayId || !rows.has(row.jobId)) rows.set(row.jobId, row);
  const needAccounting: BackendJobV1[] = [];
  for (const job of jobs) {
    const row = job.externalId ? rows.get(job.externalId) : undefined;
    const name = String(job.data.jobName ?? '');
    if (row && row.name === name) {
      const observation = slurmObservation(row.state, 'squeue', { reason: row.reason });
      // squeue has no exit code: ask accounting for finished jobs.
      if (
        observation.state === 'succeeded' ||
        observation.state === 'failed' ||
        observation.state === 'cancelled'
      )
        needAccounting.push(job);
      else out.set(job.id, observation);
    } else {
      needAccounting.push(job);
    }
  }
  if (needAccounting.length === 0) return out;
  const createdAt = needAccounting.map((job) => job.createdAt);
  for (const chunk of chunks(needAccounting, QUERY_CHUNK)) {
    const ids = chunk.map((job) => job.externalId).filter((id): id is string => id !== null);
    const { result, rows: accounting } = await sacctRows(
      context,
      options,
      `--jobs=${ids.join(',')}`,
      createdAt,
    );
    const byId = accounting && new Map<string, SacctRow>(accounting.map((row) => [row.jobId, row]));
    for (const job of chunk) out.set(job.id, reconcile(job, rows, byId, result));
  }
  await addExitCodes(context, needAccounting, out);
  return out;
}

/**
 * Replace sacct's exit codes with the ones the job wrapper recorded: sacct (up to 25.05)
 * shows an exit status of 128 or more reduced by 128, so `exit 137` would read as 9.
 * One remote command for every job that finished in this poll; if it fails, sacct's stand.
 */
async function addExitCodes(
  context: BackendContextV1,
  jobs: readonly BackendJobV1[],
  observations: Map<string, ObservationV1>,
): Promise<void> {
  const finished = jobs.filter((job) => {
    const observation = observations.get(job.id);
    return (
      observation?.kind === 'found' &&
      (observation.state === 'failed' || observation.state === 'succeeded') &&
      job.data.jobDir
    );
  });
  if (finished.length === 0) return;
  let result: RunResultV1;
  try {
    result = await context.transport.runScript(
      EXIT_CODES_SCRIPT,
      finished.map((job) => String(job.data.jobDir)),
      { timeoutMs: QUERY_TIMEOUT_MS },
    );
  } catch {
    return;
  }
  const codes = parseExitCodes(result.stdout);
  for (const job of finished) {
    const code = codes.get(String(job.data.jobDir));
    const observation = observations.get(job.id);
    if (code === undefined || observation?.kind !== 'found') continue;
    const exact = exitObservation(code, observation.source);
    if (exact.kind !== 'found') continue;
    observations.set(job.id, {
      ...observation,
      exitCode: code,
      signal: exact.signal ?? observation.signal ?? null,
      reason:
        observation.state === 'failed' &&
        observation.failureKind === 'application' &&
        !['timeout', 'out-of-memory', 'deadline'].includes(observation.reason ?? '')
          ? (exact.reason ?? null)
          : (observation.reason ?? null),
    });
  }
}
