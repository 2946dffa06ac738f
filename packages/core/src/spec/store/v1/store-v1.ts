import type { JobRecord, JobState } from '../../job.js';
import type { Profile } from '../../profile.js';

/** A record the store could not read: reported with where it is, never silently dropped. */
export interface StoreProblemV1 {
  /** Where the record lives (a path for file stores). */
  readonly location: string;
  readonly message: string;
}

export interface ListJobsOptionsV1 {
  /** Only jobs that are not terminal. Must not read the whole history. */
  readonly activeOnly?: boolean;
  /** With `activeOnly` false: at most this many of the most recently created jobs. */
  readonly limit?: number;
  /**
   * Whose jobs, in a store several users share: the connected user's own (when absent), every
   * user's (`'*'`), or those of the user or role named. A store of one user's jobs lists them
   * whatever this says.
   */
  readonly owner?: string;
}

export interface ListJobsResultV1 {
  /** Newest first. */
  readonly jobs: JobRecord[];
  readonly problems: StoreProblemV1[];
}

export interface ListingOptionsV1 {
  /** Only jobs created at or after this time (ISO 8601). */
  readonly since?: string;
}

/**
 * One job of a `listing()`: what a list shows of it and its JSON, without its whole record
 * parsed (a listing of the whole history reads tens of thousands of jobs).
 */
export interface ListingEntryV1 {
  readonly id: string;
  readonly name: string;
  readonly profile: string;
  readonly state: JobState;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly createdAt: string;
  /**
   * The job as JSON text (UTF-8): `JSON.stringify(listedJob(record))` of its record as it is
   * now, the record without the ledger's bookkeeping (`listedJob` in `@yonder/core/backend-kit`).
   * The bytes may be a view that the next `json()` of the listing reuses (copy them to keep
   * them), and are there only while the listing is open.
   */
  json(): Uint8Array;
}

/** Every job of the ledger, as `listJobs({})` gives them, in a form cheap to show. */
export interface ListingV1 {
  /** Newest first, ties by id (as `listJobs`). */
  readonly entries: readonly ListingEntryV1[];
  /** Records that could not be read, as `listJobs` reports them. */
  readonly problems: StoreProblemV1[];
  /** Release what the listing holds open; `json()` may fail after it. */
  close(): void;
}

/** A held lease: while held, no other holder gets the same key. */
export interface LeaseV1 {
  readonly key: string;
  /** When the previous holder said the work last completed (ISO time), if ever. */
  readonly lastCompletedAt: string | null;
  /** Give the lease up; `completed` records that the shared work was done now. */
  release(options?: { readonly completed?: boolean }): Promise<void>;
}

/** How `saveProfile` saves. */
export interface SaveProfileOptionsV1 {
  /** Create only: fail with `E_PROFILE_EXISTS` when a profile of that name exists. */
  readonly create?: boolean;
}

/**
 * The ledger: profiles, jobs, and leases that let several yonder processes share one poll.
 * Every write is atomic; concurrent writers never lose each other's updates.
 */
export interface StoreV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  /** Where the ledger lives, for messages. */
  readonly location: string;

  /**
   * Save a profile, replacing one of the same name (any case) — or, with `create`, only if
   * none exists, decided atomically: of several concurrent creates of one name, exactly one
   * succeeds. A store that ignores `create` leaves the check to its caller, which races.
   * @throws YonderError `E_INVALID_PROFILE` when the profile does not validate;
   *   `E_PROFILE_EXISTS` with `create` when a profile of that name exists.
   */
  saveProfile(profile: Profile, options?: SaveProfileOptionsV1): Promise<void>;
  /** @throws YonderError `E_CORRUPT_RECORD` when the stored profile cannot be read. */
  getProfile(name: string): Promise<Profile | undefined>;
  listProfiles(): Promise<{ profiles: Profile[]; problems: StoreProblemV1[] }>;
  /** Returns whether it existed. */
  removeProfile(name: string): Promise<boolean>;

  /** @throws YonderError `E_STORE` when a job with the same id exists. */
  createJob(job: JobRecord): Promise<void>;
  /** @throws YonderError `E_CORRUPT_RECORD` when the record cannot be read. */
  getJob(id: string): Promise<JobRecord | undefined>;
  /** Ids of every job whose id starts with `prefix`. */
  findJobIds(prefix: string): Promise<string[]>;
  /**
   * Read, change and write one job atomically with respect to every other writer.
   * `change` gets the current record and returns the new one, or undefined to leave it.
   * @throws YonderError `E_NO_SUCH_JOB` when there is no such job.
   */
  updateJob(id: string, change: (job: JobRecord) => JobRecord | undefined): Promise<JobRecord>;
  listJobs(options?: ListJobsOptionsV1): Promise<ListJobsResultV1>;
  /**
   * Optional: every job (or those created since `options.since`), the same jobs in the same
   * order as `listJobs({})`, each as it is now (a job removed is not in it), without holding
   * or parsing every record: what `yonder list --all` shows of a large history. Without it,
   * listings use `listJobs`.
   * @throws UntrustedPathError `E_UNTRUSTED_PATH` when a file it would read is not the user's own.
   */
  listing?(options?: ListingOptionsV1): Promise<ListingV1>;
  /**
   * Optional: forget a job: its record and whatever the store keeps beside it (its settings).
   * Returns whether it existed. Without it, `yonder rm` and `prune` are refused.
   * @throws YonderError `E_STORE` when it cannot be removed.
   */
  removeJob?(id: string): Promise<boolean>;
  /**
   * Optional: keep a job's settings (the JSON text it was submitted with) beside its record,
   * so the job can be submitted again. Without it, a job with settings cannot be resubmitted.
   */
  saveJobSettings?(id: string, text: string): Promise<void>;
  /** Optional, with `saveJobSettings`: the settings text kept for a job, if any. */
  getJobSettings?(id: string): Promise<string | undefined>;

  /**
   * Try to take the lease `key` for at most `ttlMs`. Undefined when a live holder has it.
   * A holder that died or overran its ttl loses it.
   */
  tryLease(key: string, ttlMs: number): Promise<LeaseV1 | undefined>;
  /** Resolve once `key` is free (or after `timeoutMs`), returning its last completion time. */
  waitForLease(key: string, timeoutMs: number): Promise<string | null>;

  /**
   * Optional: be told the id of each job written by any process, soon after its commit (a
   * PostgreSQL store: `LISTEN`). Only an id, never the job: the listener reads it under its
   * own permissions. Notifications may be missed (a dropped connection), so a listener still
   * reads the ledger now and then. Resolves once listening; the function it returns stops.
   */
  subscribe?(listener: (id: string) => void): Promise<() => Promise<void>>;

  close(): Promise<void>;
}
