import type { JsonObject, JsonValue } from '../json/json-value.js';
import type { ContainerImage, ContainerSpec, ResolvedContainer } from './container.js';
import type { Profile } from './profile.js';

/** The states every job is in, whatever runs it. */
export type JobState =
  | 'submitting'
  | 'pending'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'unknown';

/** Whose fault a failure is. */
/**
 * Whose failure it was: the job's own (`application`: non-zero exit, timeout, out of memory),
 * the submitter's (`submission`: the target refused the job as asked — an unknown partition,
 * impossible memory, a missing working directory), or the system's (`infrastructure`: a node
 * failure, the target unreachable, lost).
 */
export type FailureKind = 'application' | 'submission' | 'infrastructure';

/** What a job asks of the scheduler. Backends declare which of these they honour. */
export interface Resources {
  /** Wall-clock limit, in Slurm's forms: `MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`. */
  time?: string;
  cpus?: number;
  /** Memory per node with a unit: `512M`, `4G`, `1T` (K, M, G, T; no unit means megabytes). */
  memory?: string;
  gpus?: number;
  nodes?: number;
  partition?: string;
  account?: string;
  qos?: string;
}

export type ResourceName = keyof Resources;

export const RESOURCE_NAMES: readonly ResourceName[] = [
  'time',
  'cpus',
  'memory',
  'gpus',
  'nodes',
  'partition',
  'account',
  'qos',
];

/**
 * When a dependent may start, by what became of its parent: `ok` (the default) once it
 * succeeded, `notok` once it failed or was cancelled, `any` once it ended however it ended,
 * `started` once it started running.
 */
export type DependencyCondition = 'ok' | 'notok' | 'any' | 'started';

/** One parent of a dependent, as its record keeps it: the parent's full id and the condition. */
export interface JobDependency {
  job: string;
  when: DependencyCondition;
}

/** What a caller asks yonder to run. */
export interface JobSpec {
  /** The program and its arguments, passed without a shell. `{settings}` inside a token is replaced by the settings file's path on the target. */
  argv: string[];
  /** A human name; defaults to the program's base name. */
  name?: string;
  /** A JSON object written next to the job (after path mapping) and referenced by `{settings}`. */
  settings?: JsonObject;
  /** Environment variables for the job. Stored in the ledger. */
  env?: Record<string, string>;
  /** Environment variables that are never put in argv, a log or the ledger: they travel into a 0600 file the job reads. */
  secrets?: Record<string, string>;
  resources?: Resources;
  /** Extra scheduler options, one argument per element, passed as they are (never through a shell). */
  schedulerOptions?: string[];
  /** The directory the job runs in on the target; defaults per backend. */
  cwd?: string;
  /**
   * Run the job in a container (fields the profile's `container` does not give); `null`: in
   * none, even when the profile has a container. In a container, `cwd` is a path inside it.
   */
  container?: ContainerSpec | null;
  /**
   * Start only once every parent's condition holds: each `JOB[:WHEN]`, where JOB is a job id
   * or an unambiguous prefix of one (of any profile), or `#N`, the job numbered N of the same
   * `submitMany` call, and WHEN is `ok` (the default), `notok`, `any` or `started`. The job
   * waits in the ledger (`pending`, native state `waiting`) until a refresh finds its
   * conditions met, and is settled `failed` (`dependency-never-satisfied`) once one can no
   * longer be.
   */
  after?: readonly string[];
}

/** One state change, as kept in a job's history. */
export interface Transition {
  at: string;
  from: JobState | null;
  to: JobState;
  /** What reported it: `submit`, `squeue`, `sacct`, `exit-code-file`, `cancel`, `pending-timeout`… */
  source: string;
  nativeState: string | null;
  reason?: string | null;
  /**
   * When the run this transition brought started, as its target recorded it: on the transition
   * that first gave the job a start, and on each that brought a rerun's (after a requeue), so
   * the history keeps every run's start while `startedAt` is the latest.
   */
  startedAt?: string;
}

/** The identity of a process, robust to pid reuse. */
export interface ProcessIdentity {
  pid: number;
  /** Start time in clock ticks since boot, from /proc/PID/stat field 22. */
  startTime: string;
  bootId: string;
  host: string;
}

/** A piece of a job's log kept in the ledger: its bytes `start`..`end` (base64), read at `at`. */
export interface LogTail {
  /** When it was read (ISO time). */
  at: string;
  /** The byte offset in the log of its first byte. */
  start: number;
  /** The byte offset just after its last byte: the log's size when it was read. */
  end: number;
  /** The bytes, base64. */
  data: string;
}

/** The ledger's record of one job. */
export interface JobRecord {
  id: string;
  name: string;
  /** The profile's name at submission time. */
  profile: string;
  backend: string;
  /** The backend's grouping key: jobs with the same target are polled together. */
  target: string;
  state: JobState;
  nativeState: string | null;
  exitCode: number | null;
  signal: string | null;
  reason: string | null;
  failureKind: FailureKind | null;
  externalId: string | null;
  createdAt: string;
  updatedAt: string;
  submittedAt: string | null;
  /** When the job itself started (its latest run, after a requeue), as its target recorded it; absent until known. */
  startedAt?: string | null;
  /** When the job ended: the end its target recorded when known, else when yonder noticed it. */
  finishedAt: string | null;
  /** When yonder noticed the job had ended (its poll, or its cancel); absent until then. */
  noticedAt?: string | null;
  /** The last error met while submitting, polling or cancelling; cleared by a healthy poll. */
  error: { code: string; message: string } | null;
  history: Transition[];
  /**
   * When a cancel was first asked for, and why (`user` or `pending-timeout`); when it was last
   * sent; and when it first reached the job while the job ran (`reachedAt`: taken just before
   * that send; null while it has reached nothing, absent in records older than it). `confirmedAt`:
   * when a send was first answered by the target as having reached the running job; once set,
   * another send's answer that the job was no longer running (it had just ended, of this
   * signal) never takes the mark back.
   */
  cancel: {
    requestedAt: string;
    reason: 'user' | 'pending-timeout';
    lastSentAt: string | null;
    reachedAt?: string | null;
    confirmedAt?: string | null;
  } | null;
  /** Healthy polls in a row that did not find the job. */
  misses: number;
  /** When the current run of misses began. */
  absentSince?: string | null;
  /** When the job was last seen pending (start of the current pending spell). */
  pendingSince: string | null;
  spec: {
    argv: string[];
    env: Record<string, string>;
    secretNames: string[];
    resources: Resources;
    schedulerOptions: string[];
    cwd: string | null;
    settingsSha256: string | null;
    /** The container it runs in (the profile's defaults applied); absent or null: none. */
    container?: ResolvedContainer | null;
  };
  /** The image its container runs, as the target identified it at submit. */
  containerImage?: ContainerImage | null;
  /** The profile as it was at submission, so the job stays operable after the profile changes. */
  profileSnapshot: Profile;
  /** Who is submitting (while `submitting`), so an interrupted submit can be told from a slow one. */
  submitter: ProcessIdentity | null;
  /** The backend's own per-job data (paths, pids…), opaque to core. */
  data: JsonObject;
  /**
   * The end of the job's log as yonder last read it (at most 64 KiB): shown, saying from when,
   * when the target cannot be reached. `data` is base64 of the log's bytes `start`..`end`.
   */
  logTail?: LogTail | null;
  /**
   * The jobs it was to run after, and on what condition (absent when none, and in records
   * older than dependencies). While it waits for them it is `pending` with native state
   * `waiting` and no `submittedAt`.
   */
  after?: JobDependency[];
  /** Incremented on every write. */
  revision: number;
}

export type { JsonObject, JsonValue };
