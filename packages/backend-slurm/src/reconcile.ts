/** One job's observation from what squeue, sacct and the job's own wrapper (its files on the target) say about it. */
import type { BackendJobV1, FoundObservationV1, ObservationV1 } from '@yonder/core';
import { exitObservation } from '@yonder/core/backend-kit';
import { type SacctRow, type SqueueRow, slurmObservation, slurmTime } from './parse.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
/** Failure reasons Slurm knows better than an exit status does. */
const SLURM_REASONS = new Set(['timeout', 'out-of-memory', 'deadline']);

/** A source that could not be asked, or whose answer is not to be believed. */
export interface QueryFailure {
  readonly error: { readonly code: string; readonly message: string };
}

/** What the job's wrapper left in its directory for its latest run. */
export interface WrapperFiles {
  /** 0 for the first run, N for the rerun after the N-th requeue. */
  readonly run: number;
  /** Whether the wrapper of that run started (its `wrapper.pid`). */
  readonly started: boolean;
  /** The exit status it recorded (`exit-code`), null while there is none. */
  readonly exitCode: number | null;
  /** When the job's command started and ended, as the wrapper recorded them (ISO). */
  readonly startedAt?: string;
  readonly endedAt?: string;
}

/** Everything the poll found about one job. */
export interface SlurmEvidence {
  /** squeue's row for the job's Slurm id, if it listed one (whatever its name). */
  readonly queued?: SqueueRow | undefined;
  /**
   * Whether squeue listed no job at all. Then a job that accounting says is live (running or
   * pending) is a contradiction between the two, not a sign that the job is gone.
   */
  readonly queueEmpty?: boolean;
  /** sacct's rows by Slurm id, or why its answer does not count. */
  readonly accounting: { readonly rows: ReadonlyMap<string, SacctRow> } | QueryFailure;
  /** The wrapper's files, or why they could not be read. */
  readonly files: WrapperFiles | QueryFailure;
}

function failed(source: string, error: QueryFailure['error']): ObservationV1 {
  return { kind: 'query-failed', source, error };
}

/**
 * One job's observation. squeue is authoritative for live jobs. For a job it lists as finished
 * or no longer lists, the wrapper's exit code decides how the run ended (unless accounting
 * says the job waits for another run: a requeue ended the last one) (sacct's terminal row,
 * when it has one, adds why: a timeout, a cancel); else a terminal row decides. A source that
 * failed, or an answer that cannot be true (no accounting record for a job that started or was
 * running), is a failed query that changes nothing. The job is absent only when no source
 * vouches for it: a record whose name is not the one yonder gave the job is not ours, and an
 * accounting row that still says RUNNING for a job squeue dropped while listing others (a
 * runaway record) does not vouch for it either, so the manager's absence rule (time and healthy
 * misses) applies. The same row beside a squeue that listed nothing at all contradicts it: a
 * failed query.
 */
export function reconcile(job: BackendJobV1, evidence: SlurmEvidence): ObservationV1 {
  const observation = weigh(job, evidence);
  return observation.kind === 'found' ? withTimes(observation, evidence, job) : observation;
}

/**
 * The job's own times on an observation: it started when Slurm started it (squeue's StartTime,
 * sacct's Start), else when its wrapper recorded; it ended when its wrapper recorded the end of
 * its command (to the sub-second, so it can be ordered against a cancel), else at sacct's End.
 */
function withTimes(
  observation: FoundObservationV1,
  evidence: SlurmEvidence,
  job: BackendJobV1,
): FoundObservationV1 {
  const name = String(job.data.jobName ?? '');
  const files = 'error' in evidence.files ? undefined : evidence.files;
  const rows = 'rows' in evidence.accounting ? evidence.accounting.rows : undefined;
  const named = rows?.get(job.externalId ?? '');
  const record = named?.name === name ? named : undefined;
  const queued = evidence.queued?.name === name ? evidence.queued : undefined;
  // squeue's StartTime is a real start only for a job it shows running: a pending job's is an
  // estimate, and a job cancelled while pending has the time of the cancel.
  const running = queued && slurmObservation(queued.state, 'squeue').state === 'running';
  const startedAt =
    (running ? slurmTime(queued.startTime) : undefined) ??
    slurmTime(record?.start) ??
    files?.startedAt;
  const endedAt = TERMINAL.has(observation.state)
    ? (files?.endedAt ?? slurmTime(record?.end))
    : undefined;
  return {
    ...observation,
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(endedAt === undefined ? {} : { endedAt }),
  };
}

function weigh(job: BackendJobV1, evidence: SlurmEvidence): ObservationV1 {
  const name = String(job.data.jobName ?? '');
  const id = job.externalId ?? '';
  const queued = evidence.queued?.name === name ? evidence.queued : undefined;
  const fromQueue = queued
    ? slurmObservation(queued.state, 'squeue', { reason: queued.reason })
    : undefined;
  if (fromQueue && !TERMINAL.has(fromQueue.state)) return fromQueue;
  const accounting = 'rows' in evidence.accounting ? evidence.accounting.rows : null;
  const accountingError = 'error' in evidence.accounting ? evidence.accounting.error : null;
  const named = accounting?.get(id);
  // Right after a job ends, sacct can show its record under the name "allocation" for a moment:
  // while squeue vouches for the job, a sacct row with another name is lag, not another job.
  const row = named && named.name === name ? named : undefined;
  const fromAccounting = row
    ? slurmObservation(row.state, 'sacct', { exitCode: row.exitCode })
    : undefined;
  const ended = fromAccounting && TERMINAL.has(fromAccounting.state) ? fromAccounting : fromQueue;
  const files = 'error' in evidence.files ? null : evidence.files;
  // Accounting says the job waits (REQUEUED, PENDING) and squeue lists nothing final: the exit
  // code on file is an earlier run's, ended by the requeue, not the job's end.
  if (files?.exitCode != null && !ended && fromAccounting?.state === 'pending')
    return fromAccounting;
  if (files?.exitCode != null) return withExitCode(files.exitCode, ended);
  if (ended) {
    // Slurm's own CANCELLED for a job yonder asked to cancel needs no accounting to confirm
    // it: the accepted cancel is the evidence of the end (a run that left an exit code was
    // settled above).
    if (
      ended.source === 'sacct' ||
      ended.state === 'succeeded' ||
      (ended.state === 'cancelled' && job.cancelRequested)
    )
      return ended;
    return failed(
      'sacct',
      accountingError ?? {
        code: 'E_SCHEDULER_UNAVAILABLE',
        message: 'waiting for accounting to record the finished job',
      },
    );
  }
  if (accountingError) return failed('sacct', accountingError);
  if ('error' in evidence.files) return failed('job-directory', evidence.files.error);
  if (row && evidence.queueEmpty) {
    // The scheduler's own "running" is evidence of life: a squeue that lists nothing beside it
    // is an unhealthy answer (a sick controller, a lost job table), not the job's absence.
    return failed('squeue', {
      code: 'E_SCHEDULER_UNAVAILABLE',
      message: `squeue listed no job at all while sacct says Slurm job ${id} is ${row.state}: contradicting answers, taken as a failed query`,
    });
  }
  if (row) {
    return {
      kind: 'absent',
      source: 'sacct',
      detail: `accounting says ${row.state} but squeue no longer lists the job${files?.started ? ', and its wrapper has recorded no end' : ''}`,
    };
  }
  if (files?.started || job.state === 'running') {
    // Right after a job starts, sacct may still name its record "allocation".
    const record = named
      ? `names Slurm job ${id} ${named.name}, not ${name}`
      : `has no record of Slurm job ${id}`;
    return failed('sacct', {
      code: 'E_SCHEDULER_UNAVAILABLE',
      message: `sacct ${record}, though the job ${files?.started ? 'started' : 'was running'}: an implausible answer, taken as a failed query`,
    });
  }
  return {
    kind: 'absent',
    source: 'sacct',
    detail: named
      ? `Slurm job ${id} is named ${named.name}, not ${name}: not this job`
      : 'neither squeue nor sacct knows the job, and its wrapper never started',
  };
}

/**
 * The outcome of a run whose wrapper recorded `code`: exit 0 is success whatever the
 * scheduler says (when Slurm recorded a cancel, the manager weighs the wrapper's end time
 * against the cancel: the true end wins); otherwise Slurm's terminal observation (if any) with the exact code, since
 * sacct shows statuses of 128 or more reduced by 128 (up to 25.05).
 */
function withExitCode(code: number, ended: FoundObservationV1 | undefined): FoundObservationV1 {
  const exact = exitObservation(code, 'exit-code-file') as FoundObservationV1;
  if (code === 0) return ended?.state === 'succeeded' ? ended : exact;
  if (ended?.state === 'cancelled') return ended;
  if (ended?.state !== 'failed') return exact;
  return {
    ...ended,
    exitCode: code,
    signal: exact.signal ?? ended.signal ?? null,
    reason:
      ended.failureKind === 'application' && !SLURM_REASONS.has(ended.reason ?? '')
        ? (exact.reason ?? null)
        : (ended.reason ?? null),
  };
}
