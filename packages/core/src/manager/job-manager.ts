/** The job manager's façade: the one object through which jobs are submitted, refreshed, cancelled, waited for and read, each operation delegated to the file that holds its idea. */
import type { ValidationIssue } from '../errors/validation-error.js';
import { YonderError } from '../errors/yonder-error.js';
import type { Registry } from '../registry/registry.js';
import type { BackendV1, LogChunkV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord, JobSpec, JobState } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import type { SaveProfileOptionsV1, StoreProblemV1, StoreV1 } from '../spec/store/v1/store-v1.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { DEFAULT_STATE_POLICY, type StatePolicy } from '../state/apply-observation.js';
import { isTerminal } from '../state/job-states.js';
import { requestCancel } from './cancel-jobs.js';
import {
  type ForgetOptions,
  type ForgetResult,
  forgetJobs,
  type PruneOptions,
  pruneJobs,
} from './forget-jobs.js';
import {
  followJobLog,
  type LogOptions,
  type LogResult,
  type LogWriter,
  streamJobLog,
} from './job-logs.js';
import { type ManagerContext, reread } from './manager-context.js';
import { backendOptions } from './profile-options.js';
import {
  checkProfile,
  type ProfileCheck,
  readProfile,
  saveProfile,
  validateProfile,
} from './profiles.js';
import { type RefreshOptions, refreshJobs } from './refresh-jobs.js';
import { resolveJob, resolveJobs } from './resolve-job.js';
import { specOf } from './resubmit-job.js';
import { sweepRetention } from './retention-sweep.js';
import { type SubmitOptions, submitJobs } from './submit-jobs.js';
import { TransportCache } from './transport-cache.js';
import {
  failingTargets,
  type TargetFailure,
  type WaitOptions,
  waitForCancelled,
  waitForJobs,
} from './wait-for-jobs.js';
import { type Backoff, timerSleep } from './wait-loop.js';
import { type JobWatch, type WatchJobsOptions, watchJobs } from './watch-jobs.js';

export type { ForgetOptions, ForgetResult, PruneOptions } from './forget-jobs.js';
export type { LogOptions, LogRange, LogResult, LogWriter } from './job-logs.js';
export { BUILTIN_LOCAL_PROFILE } from './profiles.js';
export type { RefreshOptions } from './refresh-jobs.js';
export type { SubmitOptions } from './submit-jobs.js';
export type { TargetFailure, WaitOptions } from './wait-for-jobs.js';
export type { Backoff } from './wait-loop.js';

/** wait and follow: 200 ms, then ×1.5, up to 1 s or the jobs' `pollSeconds` if longer. */
const DEFAULT_BACKOFF: Backoff = { initialMs: 200, factor: 1.5, maxMs: 1000 };
/** cancel's wait for the jobs to end: 100 ms, then ×2, up to 1 s. */
const DEFAULT_CANCEL_BACKOFF: Backoff = { initialMs: 100, factor: 2, maxMs: 1000 };

export interface JobManagerOptions {
  store: StoreV1;
  registry: Registry;
  /** yonder's local state directory, handed to backends. */
  stateDirectory: string;
  /**
   * The clock: the time written to records, and, when given, the time waits are measured by
   * (by default waits run on monotonic time, `performance.now()`).
   */
  now?: () => Date;
  /**
   * How waits pause: resolve after `ms`, or early when `signal` aborts. With `now`, tests drive
   * every wait without waiting. Default: a timer.
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * The pauses between polls of `wait`, `follow` and `cancel` (fields given replace the
   * defaults of all three). Default: 200 ms, ×1.5, up to 1 s or the jobs' `pollSeconds` if
   * longer; cancel 100 ms, ×2, up to 1 s.
   */
  backoff?: Partial<Backoff>;
  policy?: StatePolicy;
  /**
   * @deprecated Ignored. A refresh shares another process's poll of the same target only when
   * that poll completes after the refresh began; otherwise it polls (one command per target).
   */
  minPollIntervalMs?: number;
  /** The longest one poll may hold its lease. Default 120 s. */
  leaseTtlMs?: number;
  /**
   * Find the backend a profile names, e.g. by loading the package that provides it. Default:
   * look it up in the registry.
   */
  resolveBackend?: (id: string, profile: Profile) => Promise<BackendV1>;
  /**
   * Find the factory of the transport a profile uses (`profile.transport`, else with a host
   * the backend's `capabilities.transport`, else `local`), e.g. by loading the package that
   * provides it. Default: look it up in the registry.
   */
  resolveTransport?: (id: string, profile: Profile) => Promise<TransportFactoryV1>;
}

export interface ListOptions {
  /** Every job in the ledger, not just active and recent ones. */
  all?: boolean;
  /** Only jobs in one of these states. */
  states?: readonly JobState[];
  /** Only the jobs of this profile (its name in any case). */
  profile?: string;
  /** Only jobs created at or after this time (ISO 8601, or a Date). */
  since?: string | Date;
  /** Only jobs for which this returns true (after the other filters). */
  filter?: (job: JobRecord) => boolean;
  /** Skip this many of the jobs that match, newest first: the page's start. Default 0. */
  offset?: number;
  /** At most this many jobs from `offset` on: the page's size. Default: all that match. */
  limit?: number;
  refresh?: boolean;
  /** How many recent finished jobs to include without `all`. Default 20. */
  recent?: number;
  /**
   * Whose jobs, in a store several users share (`ListJobsOptionsV1.owner`): one's own when
   * absent, `'*'` for everyone's, or a user's name. A refresh still refreshes one's own only.
   */
  owner?: string;
}

/**
 * The only place that changes a job's state. Submits, refreshes (one batched poll per target,
 * shared between processes through a lease), cancels, waits and reads logs for every backend.
 */
export class JobManager {
  readonly store: StoreV1;
  readonly registry: Registry;
  readonly stateDirectory: string;
  private readonly transports: TransportCache;
  private readonly context: ManagerContext;

  constructor(options: JobManagerOptions) {
    this.store = options.store;
    this.registry = options.registry;
    this.stateDirectory = options.stateDirectory;
    const now = options.now ?? (() => new Date());
    const registry = options.registry;
    const resolveTransport =
      options.resolveTransport ?? (async (id: string) => registry.transport(id));
    this.transports = new TransportCache(resolveTransport);
    const transports = this.transports;
    const stateDirectory = options.stateDirectory;
    this.context = {
      store: options.store,
      stateDirectory,
      now,
      // Waits run on monotonic time, so a clock stepped back or forward never stretches or cuts a
      // `wait --timeout`; an injected `now` drives them too (tests).
      clock: {
        now: options.now ? () => now().getTime() : () => performance.now(),
        sleep: options.sleep ?? timerSleep,
      },
      backoff: { ...DEFAULT_BACKOFF, ...options.backoff },
      cancelBackoff: { ...DEFAULT_CANCEL_BACKOFF, ...options.backoff },
      policy: options.policy ?? DEFAULT_STATE_POLICY,
      leaseTtlMs: options.leaseTtlMs ?? 120_000,
      resolveBackend: options.resolveBackend ?? (async (id) => registry.backend(id)),
      resolveTransport,
      async backendContext(profile, backend) {
        const options = backendOptions(backend, profile);
        return {
          transport: await transports.get(profile, backend),
          options,
          stateDirectory,
          route: transports.route(profile, backend),
        };
      },
    };
  }

  /**
   * Every problem with a profile: common fields, the backend's schema and its own checks, and
   * the chosen transport's schema for `transportOptions`.
   */
  validateProfile(input: Profile): Promise<ValidationIssue[]> {
    return validateProfile(this.context, input);
  }

  /**
   * Validate and save a profile.
   * @throws ValidationError `E_INVALID_PROFILE` listing every problem.
   */
  saveProfile(input: Profile, options: SaveProfileOptionsV1 = {}): Promise<Profile> {
    return saveProfile(this.context, input, options);
  }

  /**
   * The named profile; `local` falls back to the built-in one.
   * @throws YonderError `E_NO_SUCH_PROFILE`.
   */
  profile(name: string): Promise<Profile> {
    return readProfile(this.context, name);
  }

  /** Validate a profile, ask its transport how it reaches the target (`describe`), and reach it. */
  checkProfile(name: string): Promise<ProfileCheck> {
    return checkProfile(this.context, name);
  }

  /**
   * The transport that reaches a named profile's target: the one every operation on it shares,
   * closed with the manager (for `connect`/`disconnect` of a transport that keeps a login).
   * @throws YonderError `E_NO_SUCH_PROFILE`; what finding the backend or transport throws.
   */
  async transportOf(name: string): Promise<TransportV1> {
    const profile = await readProfile(this.context, name);
    const backend = await this.context.resolveBackend(profile.backend, profile);
    return (await this.context.backendContext(profile, backend)).transport;
  }

  /**
   * Resolve a full id or an unambiguous prefix.
   * @throws YonderError `E_NO_SUCH_JOB` or `E_AMBIGUOUS_JOB`.
   */
  resolve(reference: string): Promise<JobRecord> {
    return resolveJob(this.store, reference);
  }

  /**
   * Submit a job through a profile, with the profile's defaults for what the spec does not say
   * (`profile.defaults`) and its policy for what the backend cannot honour
   * (`profile.unsupportedResources`). The job is in the ledger (as `submitting`) before the
   * backend is asked, so an interrupted submit is found again, never forgotten.
   * @throws ValidationError `E_INVALID_JOB_SPEC`; YonderError from the backend.
   */
  async submit(spec: JobSpec, options: SubmitOptions = {}): Promise<JobRecord> {
    const [job] = await submitJobs(this.context, [spec], options, true);
    return job as JobRecord;
  }

  /**
   * Submit several jobs through one profile. Backends that can (`submitMany`) start them in one
   * round trip to the target. Every job is in the ledger before the backend is asked; a job
   * the target refused comes back `failed` with its error, the others are submitted. Once
   * `options.signal` is aborted nothing more is sent: the result holds the jobs sent, and the
   * others leave no record.
   * @throws ValidationError `E_INVALID_JOB_SPEC` (paths start with the job's index) before anything is submitted.
   */
  submitMany(specs: readonly JobSpec[], options: SubmitOptions = {}): Promise<JobRecord[]> {
    return submitJobs(this.context, specs, options, false);
  }

  /**
   * Submit a job again: the same spec (its settings kept beside the record), through its
   * profile as it is now, or `options.profile`. Secrets are never kept: give them again. Its
   * dependencies are kept (refused, as at submit, when one can no longer hold), unless
   * `options.after` gives others (`[]`: none).
   * @throws YonderError `E_SETTINGS_MISSING`, `E_SECRET_MISSING`; as `submit`.
   */
  async resubmit(
    reference: string,
    options: SubmitOptions & {
      secrets?: Readonly<Record<string, string>>;
      after?: readonly string[];
    } = {},
  ): Promise<JobRecord> {
    const job = await this.resolve(reference);
    const { secrets, after, ...submitOptions } = options;
    const spec = await specOf(this.context, job, secrets);
    if (after !== undefined) {
      if (after.length > 0) spec.after = after;
      else delete spec.after;
    }
    return this.submit(spec, { profile: job.profile, ...submitOptions });
  }

  /**
   * Forget jobs: their records, and their directories on their targets (through the backend,
   * one command per target). A job that is not terminal only with `force` (cancelled first).
   * @throws YonderError `E_JOB_ACTIVE` when a job is active and `force` is not given.
   */
  async forget(
    references: readonly string[],
    options: ForgetOptions = {},
  ): Promise<ForgetResult[]> {
    let jobs = await resolveJobs(this.store, references);
    // A job that ended a moment ago still reads active until it is polled: asked first (one
    // poll per target), so a finished job is never refused as running.
    const active = jobs.filter((job) => !isTerminal(job.state)).map((job) => job.id);
    if (active.length > 0 && !options.force) {
      await this.refresh({ ids: active });
      jobs = await reread(this.context, jobs);
    }
    return forgetJobs(this.context, jobs, options);
  }

  /** Forget every terminal job that ended longer ago than `olderThanMs` (as `forget`). */
  prune(options: PruneOptions): Promise<{ results: ForgetResult[]; problems: StoreProblemV1[] }> {
    return pruneJobs(this.context, options);
  }

  /**
   * Bring active jobs up to date: for each target, one batched poll, shared with any other
   * yonder process refreshing the same target at the same time.
   */
  refresh(options: RefreshOptions = {}): Promise<{ problems: StoreProblemV1[] }> {
    return refreshJobs(this.context, options);
  }

  /**
   * Ask for jobs to stop. The request is remembered and repeated by every refresh until the
   * job is terminal; after the profile's grace period the forceful form is used.
   * With `waitMs`, keeps refreshing until the jobs are terminal or the time is up.
   */
  async cancel(
    references: readonly string[],
    options: { waitMs?: number } = {},
  ): Promise<JobRecord[]> {
    const jobs = await resolveJobs(this.store, references);
    await requestCancel(this.context, jobs);
    return waitForCancelled(
      this.context,
      jobs.map((job) => job.id),
      options.waitMs ?? 0,
    );
  }

  /**
   * Forget, at most once an hour per ledger, the finished jobs of profiles past their
   * `retentionSeconds` (as `prune`, in bounded time); what could not be forgotten, and a sweep
   * that failed, come back as problems. `list` does this after its refresh.
   */
  applyRetention(): Promise<StoreProblemV1[]> {
    return sweepRetention(this.context);
  }

  /**
   * Active jobs plus recent ones (or all), newest first, after a refresh unless told not to;
   * filtered (`states`, `profile`, `since`, `filter`), then paged (`offset`, `limit`): `total`
   * is how many matched before paging. The refresh also forgets, at most once an hour per
   * ledger, the finished jobs of profiles past their `retentionSeconds` (as `prune`), and
   * reports what it could not forget.
   * @throws YonderError `E_USAGE` when `since` is not a time, or `offset` or `limit` not a
   *   whole number of at least 0.
   */
  async list(
    options: ListOptions = {},
  ): Promise<{ jobs: JobRecord[]; total: number; problems: StoreProblemV1[] }> {
    const since = options.since === undefined ? undefined : new Date(options.since);
    if (since !== undefined && Number.isNaN(since.getTime()))
      throw new YonderError('E_USAGE', `since must be a time, such as 2026-01-31T12:00:00Z.`);
    for (const name of ['offset', 'limit'] as const) {
      const value = options[name];
      if (value !== undefined && (!Number.isInteger(value) || value < 0))
        throw new YonderError('E_USAGE', `${name} must be a whole number of at least 0.`);
    }
    const problems: StoreProblemV1[] = [];
    if (options.refresh ?? true) {
      problems.push(...(await this.refresh()).problems);
      problems.push(...(await this.applyRetention()));
    }
    let jobs: JobRecord[];
    const owner = options.owner === undefined ? {} : { owner: options.owner };
    if (options.all) {
      const result = await this.store.listJobs(owner);
      jobs = result.jobs;
      problems.push(...result.problems);
    } else {
      const [active, recent] = await Promise.all([
        this.store.listJobs({ activeOnly: true, ...owner }),
        this.store.listJobs({ limit: options.recent ?? 20, ...owner }),
      ]);
      const seen = new Map<string, JobRecord>();
      for (const job of [...active.jobs, ...recent.jobs]) seen.set(job.id, job);
      jobs = [...seen.values()].sort((a, b) =>
        a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0,
      );
      for (const problem of [...active.problems, ...recent.problems]) {
        if (!problems.some((p) => p.location === problem.location)) problems.push(problem);
      }
    }
    if (options.states) jobs = jobs.filter((job) => options.states?.includes(job.state));
    if (options.profile) {
      const wanted = options.profile.toLowerCase();
      jobs = jobs.filter((job) => job.profile.toLowerCase() === wanted);
    }
    if (since !== undefined)
      jobs = jobs.filter((job) => Date.parse(job.createdAt) >= since.getTime());
    if (options.filter) jobs = jobs.filter(options.filter);
    const total = jobs.length;
    const offset = options.offset ?? 0;
    if (offset > 0 || options.limit !== undefined)
      jobs = jobs.slice(offset, options.limit === undefined ? undefined : offset + options.limit);
    return { jobs, total, problems };
  }

  /**
   * The targets among `jobs` whose last poll failed (active jobs with an error), one entry per
   * target with its jobs and the error: what a front end warns about.
   */
  failingTargets(jobs: readonly JobRecord[]): Array<Omit<TargetFailure, 'since'>> {
    return [...failingTargets(jobs).values()];
  }

  /** The jobs, refreshed first unless told not to. */
  async status(
    references: readonly string[],
    options: { refresh?: boolean } = {},
  ): Promise<JobRecord[]> {
    const jobs = await resolveJobs(this.store, references);
    if (!(options.refresh ?? true)) return jobs;
    await this.refresh({ ids: jobs.filter((job) => !isTerminal(job.state)).map((job) => job.id) });
    return reread(this.context, jobs);
  }

  /**
   * Wait until every job is terminal. Resolves with the jobs; `timedOut` is true when the time
   * ran out first; `gaveUp` names the target that failed every poll for `giveUpAfterMs`.
   */
  async wait(
    references: readonly string[],
    options: WaitOptions = {},
  ): Promise<{ jobs: JobRecord[]; timedOut: boolean; gaveUp: TargetFailure | null }> {
    return waitForJobs(this.context, await resolveJobs(this.store, references), options);
  }

  /**
   * A part of a job's output in one buffer (default: its last 10 lines), exactly the bytes the
   * job wrote. For a log of any size, `streamLogs` writes it in bounded chunks instead.
   * @throws YonderError as `streamLogs`.
   */
  async logs(
    reference: string,
    options: Omit<LogOptions, 'onNotice'> = {},
  ): Promise<{ job: JobRecord; chunk: LogChunkV1; result: LogResult }> {
    const pieces: Buffer[] = [];
    const result = await this.streamLogs(
      reference,
      (chunk) => {
        pieces.push(Buffer.from(chunk.data));
      },
      options,
    );
    const data = Buffer.concat(pieces);
    const chunk: LogChunkV1 = {
      exists: result.exists,
      data,
      start: result.start,
      offset: result.start + data.length,
      size: result.size,
      ...(result.message === undefined ? {} : { message: result.message }),
    };
    return { job: result.job, chunk, result };
  }

  /**
   * Write a part of a job's output to `write` (default: its last 10 lines; or `lines`, `bytes`,
   * `all`), chunk by chunk, each awaited: memory stays bounded whatever the log's size. A
   * chunk's `data` is lent until its write resolves (copy what you keep). When
   * the target cannot be reached, the tail kept from the last read is written instead
   * (`result.kept`). `result.message` says why there is no log.
   * @throws YonderError `E_LOG_UNAVAILABLE` when the log cannot be read; `E_TRANSPORT` or
   *   `E_TIMEOUT` when the target cannot be reached and no tail was kept.
   */
  async streamLogs(
    reference: string,
    write: LogWriter,
    options: LogOptions = {},
  ): Promise<LogResult> {
    return streamJobLog(this.context, await this.resolve(reference), write, options);
  }

  /**
   * Write a part of a job's output (as `streamLogs`), then what it writes next, until the job
   * is terminal and everything it wrote has been written, or `signal` aborts. `onNotice` gets
   * messages for people (e.g. the log does not exist yet). The result has the job as last seen.
   */
  async follow(reference: string, write: LogWriter, options: LogOptions = {}): Promise<LogResult> {
    return followJobLog(this.context, await this.resolve(reference), write, options);
  }

  /**
   * Every change to the ledger's jobs, made by this process or any other sharing the ledger:
   * created, state changed or updated (with the fields that changed), removed (any job, by
   * any process), poll failed, log grew (with `logSizes`). Refreshes go through this manager,
   * one shared poll per target. End it with `options.signal` or the watch's `close()`.
   */
  watch(options: WatchJobsOptions = {}): JobWatch {
    return watchJobs(this, options);
  }

  async close(): Promise<void> {
    await this.transports.close();
    await this.store.close();
  }
}
