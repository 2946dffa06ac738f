/** One job's observation from what squeue and sacct say about it. */
import type { BackendJobV1, ObservationV1, RunResultV1 } from '@yonder/core';
import { type SacctRow, type SqueueRow, slurmObservation } from './parse.js';
import { schedulerUnavailable } from './slurm-command.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * One job's observation from squeue's rows and sacct's (null when sacct failed). squeue is
 * authoritative for live jobs, sacct for finished ones (it has the exit code); a record whose
 * name is not the one yonder gave the job is not ours.
 */
export function reconcile(
  job: BackendJobV1,
  queue: ReadonlyMap<string, SqueueRow>,
  accounting: ReadonlyMap<string, SacctRow> | null,
  accountingResult?: RunResultV1,
): ObservationV1 {
  const name = String(job.data.jobName ?? '');
  const id = job.externalId ?? '';
  const queuedRow = queue.get(id);
  const queued = queuedRow && queuedRow.name === name ? queuedRow : undefined;
  const fromQueue = queued
    ? slurmObservation(queued.state, 'squeue', { reason: queued.reason })
    : undefined;
  if (fromQueue && !TERMINAL.has(fromQueue.state)) return fromQueue;
  if (accounting === null) {
    if (fromQueue?.state === 'succeeded') return fromQueue;
    return {
      kind: 'query-failed',
      source: 'sacct',
      error: accountingResult
        ? schedulerUnavailable('sacct', accountingResult).toJSON()
        : { code: 'E_SCHEDULER_UNAVAILABLE', message: 'sacct failed' },
    };
  }
  const named = accounting.get(id);
  // Right after a job ends, sacct can show its record under the name "allocation" for a moment:
  // while squeue vouches for the job, a sacct row with another name is lag, not another job.
  if (named && named.name !== name && !queued) {
    return {
      kind: 'absent',
      source: 'sacct',
      detail: `Slurm job ${id} is named ${named.name}, not ${name}: not this job`,
    };
  }
  const row = named && named.name === name ? named : undefined;
  const fromAccounting = row
    ? slurmObservation(row.state, 'sacct', { exitCode: row.exitCode })
    : undefined;
  if (fromAccounting && TERMINAL.has(fromAccounting.state)) return fromAccounting;
  if (fromQueue) {
    // Finished in squeue, not yet in accounting (it lags by a second or so).
    if (fromQueue.state === 'succeeded') return fromQueue;
    return {
      kind: 'query-failed',
      source: 'sacct',
      error: {
        code: 'E_SCHEDULER_UNAVAILABLE',
        message: 'waiting for accounting to record the finished job',
      },
    };
  }
  return {
    kind: 'absent',
    source: 'sacct',
    detail: row
      ? `accounting says ${row.state} but squeue no longer lists the job`
      : 'neither squeue nor sacct knows the job',
  };
}
