import type { TSchema } from '@sinclair/typebox';
import type { ValidationIssue } from '../../../errors/validation-error.js';
import type { JsonObject, JsonValue } from '../../../json/json-value.js';
import type { ContainerImage, ContainerRuntime, ResolvedContainer } from '../../container.js';
import type {
  DependencyCondition,
  FailureKind,
  JobState,
  ResourceName,
  Resources,
} from '../../job.js';
import type { Profile } from '../../profile.js';
import type { TransportV1 } from '../../transport/v1/transport-v1.js';

/** What a backend can do, declared rather than guessed. */
export interface BackendCapabilitiesV1 {
  /** Which `resources` fields the backend honours; others are refused at submit. */
  readonly resources: readonly ResourceName[];
  /** Whether pass-through `schedulerOptions` are accepted. */
  readonly schedulerOptions: boolean;
  /** Whether the backend needs a host (`ssh`), may have one (`slurm`), or never has one (`local`). */
  readonly host: 'required' | 'optional' | 'none';
  /** Whether `recover` can find a job whose submit was interrupted. */
  readonly recoverSubmit: boolean;
  /** Whether `readLog` can return output while the job runs. */
  readonly logs: boolean;
  /**
   * How long, in seconds, a job may be missing from every source the backend asks before it is
   * declared lost (besides a few healthy polls in a row). Schedulers whose accounting lags need
   * some; default 0.
   */
  readonly absentGraceSeconds?: number;
  /**
   * The registry id of the transport that reaches `profile.host` when the profile names none
   * (`profile.transport`). A profile without a host, or a backend without this, uses `local`.
   */
  readonly transport?: string;
  /**
   * How long, in seconds, after a job entered the ledger an interrupted submit may still be in
   * flight: until then `recover` reports it as not found yet rather than never submitted.
   * Default 30.
   */
  readonly submitGraceSeconds?: number;
  /**
   * The container runtimes the backend runs jobs in (`SubmitRequestV1.container`); a job asking
   * for another, or for any when this is absent, is refused before anything is submitted.
   */
  readonly containers?: readonly ContainerRuntime[];
  /**
   * What of a job's dependencies (`JobSpec.after`) the scheduler could keep itself: the
   * conditions it has a native form for (Slurm: `afterok`, `afternotok`, `afterany`, `after`).
   * Absent: none. Whatever a backend declares, the manager keeps every dependency in the
   * ledger today (a dependent is submitted once its parents' conditions hold, and settled when
   * one never can); this is where a backend says what it could take over.
   */
  readonly dependencies?: { readonly native: readonly DependencyCondition[] };
}

/**
 * Everything a backend may use for one operation. `Options` is the type of the backend's
 * `profile.options` (`Static<typeof optionsSchema>`).
 */
export interface BackendContextV1<Options = JsonObject> {
  /** Reaches the target; shared by every operation on it. */
  readonly transport: TransportV1;
  /**
   * The profile's `options` (`{}` when it has none), checked against the backend's
   * `optionsSchema` by the manager before the operation: read them here, typed, never from
   * `profile.options`.
   */
  readonly options: Options;
  /** yonder's local state directory (the ledger's home). */
  readonly stateDirectory: string;
  /**
   * Which way `transport` reaches the target (the transport's id, host and options, as the
   * manager shares one transport): two profiles naming one host alias through different ssh
   * configs have different routes, and may reach different machines or accounts. Keep what
   * is learnt about the target (a probe) per route; fall back to `transport.target` where
   * none is given.
   */
  readonly route?: string;
  readonly signal?: AbortSignal;
}

/** A job as a backend sees it when polling, cancelling or reading logs. */
export interface BackendJobV1<Options = JsonObject> {
  readonly id: string;
  readonly name: string;
  readonly externalId: string | null;
  readonly state: JobState;
  readonly createdAt: string;
  readonly cancelRequested: boolean;
  readonly profile: Profile;
  /**
   * The options of the job's profile (as recorded at submit), checked against the backend's
   * `optionsSchema` like `context.options`: jobs polled together may differ in options that
   * are not part of their `targetKey`.
   */
  readonly options: Options;
  /** What the backend returned as `data` at submit. */
  readonly data: JsonObject;
}

/** A job to start. */
export interface SubmitRequestV1 {
  /** yonder's id for the job: use it to name the job directory and the marker. */
  readonly id: string;
  readonly name: string;
  /** A string that ties the scheduler's record to this job (`yonder:<id>`). */
  readonly marker: string;
  /** When the job entered the ledger (ISO time): a recovery can tell an old submit from one in flight. */
  readonly createdAt: string;
  /** argv with `{settings}` still in it; use `renderArgv` once the settings path is known. */
  readonly argv: readonly string[];
  /** The settings after path mapping, as the text to write; undefined when there are none. */
  readonly settingsText?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly secrets: Readonly<Record<string, string>>;
  readonly resources: Resources;
  readonly schedulerOptions: readonly string[];
  readonly cwd?: string;
  /**
   * The container to run the job in (checked syntactically; the target must still check that
   * the image and the bind sources exist). Absent: none. In one, `cwd` is a path inside it.
   */
  readonly container?: ResolvedContainer;
  readonly profile: Profile;
}

/** What a successful submit (or a recovery) found. */
export interface SubmitResultV1 {
  /** The scheduler's id (a pid for workstation backends), validated. */
  readonly externalId: string;
  readonly state: 'pending' | 'running';
  readonly nativeState?: string;
  /** Backend data kept with the job and handed back on every later call. */
  readonly data: JsonObject;
  /** The image the job's container runs, as the target identified it (jobs in a container). */
  readonly containerImage?: ContainerImage;
}

/** A job found by the query: its normalised and raw state. */
export interface FoundObservationV1 {
  readonly kind: 'found';
  readonly state: JobState;
  readonly nativeState: string;
  readonly exitCode?: number | null;
  readonly signal?: string | null;
  readonly reason?: string | null;
  readonly failureKind?: FailureKind | null;
  /** What answered: `squeue`, `sacct`, `exit-code-file`, `process`… */
  readonly source: string;
  /** When the job itself started (ISO), when the target recorded it (the job's wrapper). */
  readonly startedAt?: string;
  /** When the job itself ended (ISO), when the target recorded it; becomes `finishedAt`. */
  readonly endedAt?: string;
  /**
   * True when the target itself recorded that the job ended on its own, not by a cancel: a
   * scheduler that marks every job its cancel reached as cancelled (Slurm's CANCELLED) and
   * reports COMPLETED, FAILED or TIMEOUT otherwise. A cancel asked for meanwhile then leaves
   * the outcome as it is (the true end wins). Leave it out when the target cannot tell.
   */
  readonly endedOnItsOwn?: boolean;
}

/** The source does not know the job. Not the same as finished. */
export interface AbsentObservationV1 {
  readonly kind: 'absent';
  readonly source: string;
  readonly detail?: string;
}

/** The query could not be made. Never changes a job's state. */
export interface QueryFailedObservationV1 {
  readonly kind: 'query-failed';
  readonly source: string;
  readonly error: { readonly code: string; readonly message: string };
}

export type ObservationV1 = FoundObservationV1 | AbsentObservationV1 | QueryFailedObservationV1;

export type CancelOutcomeV1 =
  | { readonly kind: 'sent' }
  | { readonly kind: 'not-running' }
  | {
      readonly kind: 'failed';
      readonly error: { readonly code: string; readonly message: string };
    };

/**
 * A piece of a job's log: the bytes exactly as the job wrote them, never decoded (a log need not
 * be UTF-8, and a chunk may end inside a character), with byte offsets into the log file.
 */
export interface LogChunkV1 {
  /** Whether the log exists yet. When false, `data` is empty and the offsets are 0. */
  readonly exists: boolean;
  /** The bytes of the log from `start` to `offset`. */
  readonly data: Buffer;
  /** The byte offset of `data`'s first byte in the log. */
  readonly start: number;
  /** The byte offset just after `data` (`start + data.length`): pass it back to read what follows. */
  readonly offset: number;
  /**
   * The log's size in bytes when it was read. `offset < size` means there is more to read now
   * (`maxBytes` cut the chunk short); `size` below the offset asked for means the log shrank.
   */
  readonly size: number;
  /** When the log does not exist: why, for people (e.g. the path that is missing). */
  readonly message?: string;
}

/**
 * Where a read starts (`offset`, else the last `tailLines` lines, else the last `tailBytes`
 * bytes, else the log's start) and how much it returns (at most `maxBytes` from there; the rest
 * is read with `offset`). Offsets and sizes are in bytes of the log file.
 */
export interface ReadLogOptionsV1 {
  /**
   * Start at the first of the last N lines, exactly as `tail -n N`: a line ends with "\n", a
   * last line without one counts, and bytes that are not UTF-8 are bytes like any other.
   */
  readonly tailLines?: number;
  /** Start N bytes before the end (at 0 when the log is shorter). */
  readonly tailBytes?: number;
  /** Start at this byte offset (past the end: at the end, with no data). */
  readonly offset?: number;
  /** Return at most this many bytes. Default 1 MiB. */
  readonly maxBytes?: number;
  /**
   * Optional: a backend that can stream hands the bytes over here, piece after piece in order,
   * each awaited before the next (backpressure), instead of in the returned chunk's `data`, which
   * is then empty while its `start` and `offset` span what was handed over (`maxBytes` still
   * bounds the read; it may then be large). A piece's memory is lent until its promise settles.
   * A backend that cannot stream ignores it and returns its bytes in `data` as without it.
   */
  readonly onData?: (piece: LogChunkV1) => Promise<void>;
}

/** What became of a job's files on its target when they were cleaned up. */
export type CleanupOutcomeV1 =
  | { readonly kind: 'removed' }
  /** There was nothing to remove (never made, or removed before). */
  | { readonly kind: 'absent' }
  /** Left in place: not the job's own to remove (a link, another user's), or it could not be removed. */
  | { readonly kind: 'kept'; readonly reason: string }
  | {
      readonly kind: 'failed';
      readonly error: { readonly code: string; readonly message: string };
    };

/** What `profile check` found. */
export interface ProbeReportV1 {
  readonly ok: boolean;
  /** Facts found, e.g. `{ "slurmVersion": "22.05.8", "accounting": true }`. */
  readonly facts: { readonly [key: string]: JsonValue | undefined };
  readonly problems: readonly string[];
}

/**
 * A backend: what runs a job. It never opens connections itself; every
 * command goes through `context.transport`. Core's JobManager is the only
 * thing that changes a job's state: a backend reports, core decides.
 * `Options` is the type of its `profile.options`, `Static<typeof optionsSchema>`: the manager
 * checks them against the schema and hands them over as `context.options` (as vercel/ai's
 * `parseProviderOptions` does for providers), so a backend never casts them.
 */
export interface BackendV1<Options = JsonObject> {
  readonly specificationVersion: 'v1';
  /** The registry id (`local`, `slurm`, `ssh`, `command`, or a plugin's). */
  readonly id: string;
  readonly capabilities: BackendCapabilitiesV1;
  /** TypeBox schema of `profile.options` (strict: no unknown keys). */
  readonly optionsSchema: TSchema;
  /** Backend-specific checks beyond the schema. Returns dot-path issues; never throws. */
  validateProfile(profile: Profile): ValidationIssue[];
  /**
   * Jobs whose profiles give the same key are polled and cancelled together. `options` are the
   * profile's, checked as for `context.options`.
   */
  targetKey(profile: Profile, options: Options): string;
  /** Reach the target and report what is there (`yonder profile check`). */
  probe(profile: Profile, context: BackendContextV1<Options>): Promise<ProbeReportV1>;
  /**
   * Start a job.
   * @throws YonderError `E_SUBMIT_FAILED` when the target refused it (nothing was started),
   *   `E_TRANSPORT`/`E_TIMEOUT` when it is not known whether it started.
   */
  submit(request: SubmitRequestV1, context: BackendContextV1<Options>): Promise<SubmitResultV1>;
  /**
   * Optional: start several jobs of one target at once (one round trip for all). The answer
   * has one entry per request, in order: its result, or the error that job met (`E_SUBMIT_FAILED`
   * when nothing started, `E_TRANSPORT`/`E_TIMEOUT` when it is not known).
   * @throws YonderError only when none of them could be tried.
   */
  submitMany?(
    requests: readonly SubmitRequestV1[],
    context: BackendContextV1<Options>,
  ): Promise<ReadonlyArray<SubmitResultV1 | { readonly error: unknown }>>;
  /**
   * Find jobs whose submit was interrupted: the result if the target has the job, null if it
   * certainly does not. Only called when `capabilities.recoverSubmit`.
   * @throws YonderError when the target cannot be asked.
   */
  recover?(
    requests: readonly SubmitRequestV1[],
    context: BackendContextV1<Options>,
  ): Promise<ReadonlyMap<string, SubmitResultV1 | null>>;
  /**
   * Observe every given job (all on one target) in as few commands as possible.
   * A job missing from the map counts as a failed query. Should not throw; if it does,
   * every job counts as a failed query.
   */
  poll(
    jobs: readonly BackendJobV1<Options>[],
    context: BackendContextV1<Options>,
  ): Promise<ReadonlyMap<string, ObservationV1>>;
  /**
   * Ask for the jobs to stop (`force`: the last resort, after the grace period).
   * @throws YonderError when the target cannot be reached at all.
   */
  cancel(
    jobs: readonly BackendJobV1<Options>[],
    context: BackendContextV1<Options>,
    options: { readonly force: boolean },
  ): Promise<ReadonlyMap<string, CancelOutcomeV1>>;
  /**
   * Optional: remove what the jobs left on the target (their job directories), all in one
   * command per target, for jobs yonder is about to forget (`yonder rm`, `prune`). Only ever
   * called for terminal jobs. Never follow a link, and never remove what is not the user's own:
   * such an entry is `kept`, with the reason. `removeJobDirectories` from
   * `@yonder/core/backend-kit` does all of this for job directories on the target.
   * @throws YonderError when the target cannot be reached at all.
   */
  cleanup?(
    jobs: readonly BackendJobV1<Options>[],
    context: BackendContextV1<Options>,
  ): Promise<ReadonlyMap<string, CleanupOutcomeV1>>;
  /**
   * Read a piece of the job's log, as bytes with byte offsets (see `ReadLogOptionsV1` for where
   * it starts). Never decode the bytes, and never compute an offset from decoded text; a log that
   * does not exist yet is not an error (`exists: false`). `readRemoteLog` from `@yonder/core`
   * does all of this for a log file on the target.
   * @throws YonderError `E_LOG_UNAVAILABLE` when it cannot be read; `E_TRANSPORT`/`E_TIMEOUT`
   *   when the target cannot be reached (yonder then shows the tail it read last).
   */
  readLog(
    job: BackendJobV1<Options>,
    options: ReadLogOptionsV1,
    context: BackendContextV1<Options>,
  ): Promise<LogChunkV1>;
}
