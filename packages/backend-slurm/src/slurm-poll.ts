/** Poll: one squeue for every job of the target, then sacct and the wrappers' files (one round trip) for those it no longer lists as live. */
import {
  type BackendContextV1,
  type BackendJobV1,
  type FoundObservationV1,
  type ObservationV1,
  toYonderError,
} from '@yonder/core';
import { type SqueueRow, slurmObservation, slurmTime } from './parse.js';
import { reconcile } from './reconcile.js';
import { FORGET_SECRETS_SCRIPT } from './scripts.js';
import { QUERY_TIMEOUT_MS, squeueRows } from './slurm-command.js';
import { gatherEvidence } from './slurm-evidence.js';
import type { SlurmOptions } from './slurm-options.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * Observe every given job (all on one target): squeue is asked once for all of them; for
 * those it does not list as live, sacct and the wrappers' files are read in one more round
 * trip per chunk (`reconcile` weighs them). A squeue that fails, or answers with a scheduler
 * error on stderr, makes every job a failed query. Secrets kept for reruns are deleted once
 * the job is reported finished.
 */
export async function slurmPoll(
  jobs: readonly BackendJobV1<SlurmOptions>[],
  context: BackendContextV1<SlurmOptions>,
): Promise<Map<string, ObservationV1>> {
  const out = new Map<string, ObservationV1>();
  if (jobs.length === 0) return out;
  const { options } = context;
  let queue: SqueueRow[];
  try {
    queue = await squeueRows(context, options, [
      '--me',
      '--all',
      '--noheader',
      '--array',
      '--states=all',
    ]);
  } catch (error) {
    const failure = toYonderError(error, 'E_SCHEDULER_UNAVAILABLE').toJSON();
    for (const job of jobs)
      out.set(job.id, { kind: 'query-failed', source: 'squeue', error: failure });
    return out;
  }
  const rows = new Map<string, SqueueRow>();
  for (const row of queue)
    if (row.jobId === row.displayId || !rows.has(row.jobId)) rows.set(row.jobId, row);
  const ended: BackendJobV1[] = [];
  for (const job of jobs) {
    const row = job.externalId ? rows.get(job.externalId) : undefined;
    if (job.externalId === null) {
      out.set(job.id, { kind: 'absent', source: 'squeue', detail: 'the job has no Slurm id' });
    } else if (row && row.name === String(job.data.jobName ?? '')) {
      const observation = slurmObservation(row.state, 'squeue', { reason: row.reason });
      // squeue has no exit code: finished jobs are settled with accounting and the wrapper's files.
      if (TERMINAL.has(observation.state)) ended.push(job);
      else out.set(job.id, withStartTime(observation, row));
    } else {
      ended.push(job);
    }
  }
  if (ended.length === 0) return out;
  const evidence = await gatherEvidence(context, options, ended);
  for (const job of ended) {
    const found = evidence.get(job.id);
    if (!found) continue;
    out.set(
      job.id,
      reconcile(job, {
        queued: rows.get(job.externalId as string),
        queueEmpty: queue.length === 0,
        ...found,
      }),
    );
  }
  await forgetSecrets(
    context,
    ended.filter((job) => {
      const observation = out.get(job.id);
      return observation?.kind === 'found' && TERMINAL.has(observation.state);
    }),
  );
  return out;
}

/** A live job's start as Slurm recorded it (not a pending job's: its StartTime is an estimate). */
function withStartTime(observation: FoundObservationV1, row: SqueueRow): FoundObservationV1 {
  const startedAt = observation.state === 'running' ? slurmTime(row.startTime) : undefined;
  return startedAt === undefined ? observation : { ...observation, startedAt };
}

/**
 * Once a job is reported finished its secrets are deleted (one remote command for all): those
 * kept for a rerun (requeue=true), and those of a job cancelled before it started. If that
 * command fails they stay behind in the job directory (0600): no later poll comes back to a
 * finished job.
 */
async function forgetSecrets(
  context: BackendContextV1,
  jobs: readonly BackendJobV1[],
): Promise<void> {
  const dirs = jobs.map((job) => job.data.jobDir).filter((dir) => typeof dir === 'string');
  if (dirs.length === 0) return;
  await context.transport
    .runScript(FORGET_SECRETS_SCRIPT, dirs as string[], { timeoutMs: QUERY_TIMEOUT_MS })
    .catch(() => undefined);
}
