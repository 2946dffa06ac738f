import type { FailureKind, JobState } from '../spec/job.js';

/** What a native scheduler state means in yonder's terms. */
export interface NormalisedState {
  state: JobState;
  /** For failures: whose failure it is. */
  failureKind: FailureKind | null;
  /** A short reason for terminal states that carry one (`timeout`, `out-of-memory`, `cancelled by uid 0`…). */
  reason: string | null;
  /** The exit code implied by the word itself (`EXIT:3`, `COMPLETED`), if any. */
  exitCode: number | null;
}

/**
 * `generic` is the table for schedulers yonder has no backend for (command profiles);
 * `slurm` reads Slurm's long names and compact codes exactly (e.g. `ST` is a stopped
 * but live job there, while a cloud's `STOPPED` means it is gone).
 */
export type StateDialect = 'generic' | 'slurm';

type Entry = [JobState, FailureKind | null, string | null];

const pending: Entry = ['pending', null, null];
const running: Entry = ['running', null, null];
const succeeded: Entry = ['succeeded', null, null];
const failedApp: Entry = ['failed', 'application', null];
const cancelled: Entry = ['cancelled', null, null];

/** Slurm's states, long names and compact codes (reference: slurm-cli.md §1.2–1.4). */
const SLURM: Record<string, Entry> = {
  PENDING: pending,
  PD: pending,
  CONFIGURING: pending,
  CF: pending,
  EXPEDITING: pending,
  REQUEUED: pending,
  RQ: pending,
  REQUEUE_FED: pending,
  RF: pending,
  REQUEUE_HOLD: ['pending', null, 'held after requeue'],
  RH: ['pending', null, 'held after requeue'],
  SPECIAL_EXIT: ['pending', null, 'held (special exit)'],
  SE: ['pending', null, 'held (special exit)'],
  RESV_DEL_HOLD: ['pending', null, 'held (reservation deleted)'],
  RD: ['pending', null, 'held (reservation deleted)'],
  RUNNING: running,
  R: running,
  SUSPENDED: ['running', null, 'suspended'],
  S: ['running', null, 'suspended'],
  STOPPED: ['running', null, 'stopped'],
  ST: ['running', null, 'stopped'],
  SIGNALING: running,
  SI: running,
  RESIZING: running,
  RS: running,
  COMPLETING: ['running', null, 'completing'],
  CG: ['running', null, 'completing'],
  STAGE_OUT: ['running', null, 'staging out'],
  SO: ['running', null, 'staging out'],
  COMPLETED: succeeded,
  CD: succeeded,
  FAILED: failedApp,
  F: failedApp,
  OUT_OF_MEMORY: ['failed', 'application', 'out-of-memory'],
  OOM: ['failed', 'application', 'out-of-memory'],
  TIMEOUT: ['failed', 'application', 'timeout'],
  TO: ['failed', 'application', 'timeout'],
  DEADLINE: ['failed', 'application', 'deadline'],
  DL: ['failed', 'application', 'deadline'],
  CANCELLED: cancelled,
  CA: cancelled,
  NODE_FAIL: ['failed', 'infrastructure', 'node-failure'],
  NF: ['failed', 'infrastructure', 'node-failure'],
  BOOT_FAIL: ['failed', 'infrastructure', 'boot-failure'],
  BF: ['failed', 'infrastructure', 'boot-failure'],
  PREEMPTED: ['failed', 'infrastructure', 'preempted'],
  PR: ['failed', 'infrastructure', 'preempted'],
  // Not final: in a federation the sibling record is revoked because another cluster started the job.
  REVOKED: ['unknown', null, 'revoked (the job started on another cluster of the federation)'],
  RV: ['unknown', null, 'revoked (the job started on another cluster of the federation)'],
};

/** Words other schedulers and clouds use, and the seed's table. */
const GENERIC: Record<string, Entry> = {
  PENDING: pending,
  PEND: pending,
  QUEUED: pending,
  CONFIGURING: pending,
  SUBMITTED: pending,
  SCHEDULED: pending,
  WAITING: pending,
  HELD: ['pending', null, 'held'],
  REQUEUED: pending,
  RUNNING: running,
  RUN: running,
  STARTED: running,
  EXECUTING: running,
  COMPLETING: ['running', null, 'completing'],
  SUSPENDED: ['running', null, 'suspended'],
  SUCCESS: succeeded,
  SUCCEEDED: succeeded,
  COMPLETED: succeeded,
  COMPLETE: succeeded,
  DONE: succeeded,
  FAILED: failedApp,
  FAILURE: failedApp,
  ERROR: failedApp,
  TIMEOUT: ['failed', 'application', 'timeout'],
  DEADLINE_EXCEEDED: ['failed', 'application', 'timeout'],
  OUT_OF_MEMORY: ['failed', 'application', 'out-of-memory'],
  OOM: ['failed', 'application', 'out-of-memory'],
  DEADLINE: ['failed', 'application', 'deadline'],
  NODE_FAIL: ['failed', 'infrastructure', 'node-failure'],
  BOOT_FAIL: ['failed', 'infrastructure', 'boot-failure'],
  PREEMPTED: ['failed', 'infrastructure', 'preempted'],
  CANCELLED: cancelled,
  CANCELED: cancelled,
  STOPPED: cancelled,
  TERMINATED: cancelled,
  ABORTED: cancelled,
  REVOKED: ['cancelled', null, 'revoked'],
};

const TABLES: Record<StateDialect, Record<string, Entry>> = { generic: GENERIC, slurm: SLURM };

const unknown: NormalisedState = {
  state: 'unknown',
  failureKind: null,
  reason: null,
  exitCode: null,
};

/**
 * Map a scheduler's word for a job's state to yonder's. Case and a trailing `+`
 * (sacct's truncation mark) are ignored; `CANCELLED by 1000` keeps who cancelled;
 * `EXIT:<n>` is an exit code. Anything not in the table is `unknown`, never terminal.
 */
export function normaliseState(native: string, dialect: StateDialect = 'generic'): NormalisedState {
  const first = native.trim().split(/\r?\n/, 1)[0]?.trim() ?? '';
  if (first === '') return unknown;
  const exit = /^EXIT:\s*(-?\d+)$/i.exec(first);
  if (exit) {
    const code = Number(exit[1]);
    return code === 0
      ? { state: 'succeeded', failureKind: null, reason: null, exitCode: 0 }
      : { state: 'failed', failureKind: 'application', reason: null, exitCode: code };
  }
  const by = /^CANCELL?ED\s+by\s+(\S+)$/i.exec(first);
  if (by) {
    return {
      state: 'cancelled',
      failureKind: null,
      reason: `cancelled by uid ${by[1]}`,
      exitCode: null,
    };
  }
  const word = (first.split(/\s+/, 1)[0] ?? '').replace(/\+$/, '').toUpperCase();
  const entry = TABLES[dialect][word];
  if (!entry) return unknown;
  const [state, failureKind, reason] = entry;
  return { state, failureKind, reason, exitCode: state === 'succeeded' ? 0 : null };
}
