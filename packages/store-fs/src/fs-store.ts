/** The file ledger (`StoreV1`): profiles, job records and poll leases under a private state directory. */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import {
  type JobRecord,
  type LeaseV1,
  type ListJobsOptionsV1,
  type ListJobsResultV1,
  type Profile,
  type StoreProblemV1,
  type StoreV1,
  UntrustedPathError,
  YonderError,
} from '@yonder/core';
import {
  assertValid,
  checkPrivateEntry,
  createPrivateFile,
  isTerminal,
  type ListingOptionsV1,
  type ListingV1,
  parseJson,
  profileExists,
  readPrivateFile,
  removePrivateFile,
  reserveSpareFile,
  type SaveProfileOptionsV1,
  touchPrivateFile,
  validateProfileFields,
  writePrivateFileAtomic,
} from '@yonder/core/backend-kit';
import { lock, removeLock, reserveLock, tryLock, waitForUnlock } from './file-lock.js';
import { readListing } from './fs-listing.js';
import { LedgerDirectories, type LedgerDirectory } from './ledger-directories.js';
import { appendIndex, recentIds } from './ledger-index.js';
import {
  byNewest,
  isDiskFull,
  JOB_ID,
  MAX_PROFILE_BYTES,
  MAX_RECORD_BYTES,
  MAX_SETTINGS_FILE_BYTES,
  parseJobText,
  parseProfileText,
  problemLocation,
  profileKey,
  recordSpare,
  settingsPath,
  storeError,
} from './records.js';

/** A job's lock lasts this long unrenewed (a waiter on another host breaks it only after that). */
const JOB_LOCK_TTL_MS = 20_000;
/** Room kept per active job for its next record on a full disk: twice the record, at least this. */
const MIN_RECORD_SPARE_BYTES = 16 * 1024;
const LEASE_INFO_SPARE_BYTES = 4096;

export interface FsStoreOptions {
  /** The state directory; see `resolveStateDirectory`. */
  location: string;
}

/**
 * The ledger as files under the state directory:
 * `jobs/<id[0:2]>/<id>.json` (one record per job, replaced atomically under a per-job lock;
 * `<id>.settings` beside it keeps the settings it was submitted with),
 * `active/<id>` (a marker per non-terminal job, so listing active jobs reads only those),
 * `index.log` (append-only creation order, read from the end for recent jobs),
 * `listing.index` (what a listing of the whole history shows of finished jobs, by shard),
 * `profiles/<name>.json`, and `leases/` for shared polls.
 *
 * Nothing is read from or written to the state directory before it has been checked: it and
 * every directory above it must be the user's (or root's, above it), written by no one else
 * (a sticky /tmp aside), and each of the ledger's own directories the user's with no link in
 * its place; new directories are 0700 and new files 0600. No file of the ledger is read,
 * written or removed through a link. Records and profiles are checked against their schemas
 * on every read; one that fails is reported by path and left out. Each active job keeps a
 * little room aside, so that what a submit started is recorded even on a full disk.
 */
export class FsStore implements StoreV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'fs';
  readonly location: string;
  private readonly ledger: LedgerDirectories;
  private readonly dirs: Record<LedgerDirectory, string>;

  constructor(options: FsStoreOptions) {
    this.location = options.location;
    this.ledger = new LedgerDirectories(this.location);
    this.dirs = this.ledger.paths;
  }

  private jobPath(id: string): string {
    return join(this.dirs.jobs, id.slice(0, 2), `${id}.json`);
  }

  private profilePath(name: string): string {
    return join(this.dirs.profiles, `${profileKey(name)}.json`);
  }

  // ------------------------------------------------------------- profiles

  async saveProfile(profile: Profile, options: SaveProfileOptionsV1 = {}): Promise<void> {
    assertValid(
      'E_INVALID_PROFILE',
      `Profile "${String(profile?.name)}" is invalid`,
      validateProfileFields(profile),
    );
    this.ledger.ensure();
    const path = this.profilePath(profile.name);
    const text = `${JSON.stringify(profile, null, 2)}\n`;
    try {
      // A create is a link of the finished file into place: of several at once, one wins.
      if (options.create) createPrivateFile(path, text);
      else writePrivateFileAtomic(path, text);
    } catch (error) {
      if (options.create && (error as NodeJS.ErrnoException).code === 'EEXIST')
        throw profileExists(profile.name, error);
      throw storeError('write', path, error);
    }
  }

  private readProfile(path: string, key: string): Profile | undefined {
    let text: string | undefined;
    try {
      text = readPrivateFile(path, MAX_PROFILE_BYTES);
    } catch (error) {
      throw storeError('read', path, error);
    }
    return text === undefined ? undefined : parseProfileText(path, text, key);
  }

  async getProfile(name: string): Promise<Profile | undefined> {
    if (!this.ledger.verify()) return undefined;
    return this.readProfile(this.profilePath(name), profileKey(name));
  }

  async listProfiles(): Promise<{ profiles: Profile[]; problems: StoreProblemV1[] }> {
    const profiles: Profile[] = [];
    const problems: StoreProblemV1[] = [];
    if (!this.ledger.verify()) return { profiles, problems };
    for (const name of this.ledger.entries(this.dirs.profiles)) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const path = join(this.dirs.profiles, name);
      try {
        const profile = this.readProfile(path, name.slice(0, -5));
        if (profile) profiles.push(profile);
      } catch (error) {
        problems.push({
          location: problemLocation(error, path),
          message: (error as Error).message,
        });
      }
    }
    profiles.sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()));
    return { profiles, problems };
  }

  async removeProfile(name: string): Promise<boolean> {
    if (!this.ledger.verify()) return false;
    return removePrivateFile(this.profilePath(name));
  }

  // ------------------------------------------------------------- jobs

  /** A job's shard directory, checked (and made when `create`); false when it is not there. */
  private shard(id: string, create: boolean): boolean {
    const dir = join(this.dirs.jobs, id.slice(0, 2));
    if (create) {
      this.ledger.ensureDirectory(dir);
      return true;
    }
    return this.ledger.has(dir);
  }

  /**
   * Set room aside for the job's next record and lock, so that they can be written on a full
   * disk. False when there is no room now.
   */
  private reserve(id: string, text: string): boolean {
    return (
      reserveSpareFile(
        recordSpare(this.jobPath(id)),
        Math.max(MIN_RECORD_SPARE_BYTES, 2 * Buffer.byteLength(text)),
      ) && reserveLock(this.lockSpare(id))
    );
  }

  private release(id: string): void {
    removePrivateFile(recordSpare(this.jobPath(id)));
    removeLock(this.lockSpare(id));
  }

  private lockSpare(id: string): string {
    return join(this.dirs.locks, `.${id}.lock.spare`);
  }

  /**
   * Record a new job. Everything its later updates need is made first (its shard, the room for
   * its next record and lock, its index line, its active marker), so that once it exists, what
   * the backend then does to it can be recorded, even on a disk that filled up meanwhile.
   * An index line without a record (a create that failed after it) is skipped by readers.
   */
  async createJob(job: JobRecord): Promise<void> {
    if (!JOB_ID.test(job.id))
      throw new YonderError('E_STORE', `"${job.id}" is not a valid job id.`);
    this.ledger.ensure();
    const path = this.jobPath(job.id);
    const marker = join(this.dirs.active, job.id);
    const index = join(this.location, 'index.log');
    const text = `${JSON.stringify(job)}\n`;
    try {
      checkPrivateEntry(index, { role: "the ledger's index", type: 'file' });
      this.shard(job.id, true);
    } catch (error) {
      throw storeError('write', path, error);
    }
    const exists = (cause?: unknown): YonderError =>
      new YonderError('E_STORE', `A job with id ${job.id} already exists.`, { cause });
    if (this.readJob(job.id) !== undefined) throw exists();
    let step = 'write';
    let target = path;
    try {
      if (!isTerminal(job.state)) {
        if (!this.reserve(job.id, text)) {
          throw Object.assign(new Error('no room for the job’s spare files'), { code: 'ENOSPC' });
        }
        touchPrivateFile(marker);
      }
      step = 'append to';
      target = index;
      appendIndex(index, job.createdAt, job.id);
      step = 'write';
      target = path;
      createPrivateFile(path, text);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw exists(error);
      removePrivateFile(marker);
      this.release(job.id);
      throw storeError(step, target, error);
    }
  }

  /** A job's record; `shards` remembers the shard checks of one listing (one check per shard). */
  private readJob(id: string, shards?: Map<string, boolean>): JobRecord | undefined {
    const path = this.jobPath(id);
    let text: string | undefined;
    try {
      const present = shards?.get(id.slice(0, 2)) ?? this.shard(id, false);
      shards?.set(id.slice(0, 2), present);
      if (!present) return undefined;
      text = readPrivateFile(path, MAX_RECORD_BYTES);
    } catch (error) {
      throw storeError('read', path, error);
    }
    return text === undefined ? undefined : parseJobText(path, text, id);
  }

  async getJob(id: string): Promise<JobRecord | undefined> {
    if (!JOB_ID.test(id) || !this.ledger.verify()) return undefined;
    return this.readJob(id);
  }

  async findJobIds(prefix: string): Promise<string[]> {
    if (!this.ledger.verify()) return [];
    const wanted = prefix.toLowerCase();
    const { ids } = this.ledger.jobIds(wanted.length >= 2 ? wanted.slice(0, 2) : undefined);
    return ids.filter((id) => id.startsWith(wanted)).sort();
  }

  async updateJob(
    id: string,
    change: (job: JobRecord) => JobRecord | undefined,
  ): Promise<JobRecord> {
    this.ledger.ensure();
    const held = await lock(join(this.dirs.locks, `${id}.lock`), {
      ttlMs: JOB_LOCK_TTL_MS,
      timeoutMs: 30_000,
      spare: this.lockSpare(id),
    });
    let written: JobRecord | undefined;
    try {
      const current = this.readJob(id);
      if (!current) throw new YonderError('E_NO_SUCH_JOB', `No job with id ${id}.`);
      const next = change(current);
      if (next === undefined || next === current) return current;
      written = {
        ...next,
        id: current.id,
        revision: current.revision + 1,
        updatedAt: new Date().toISOString(),
      };
      const path = this.jobPath(id);
      const text = `${JSON.stringify(written)}\n`;
      try {
        writePrivateFileAtomic(path, text, { spare: recordSpare(path) });
      } catch (error) {
        throw storeError('write', path, error);
      }
      const marker = join(this.dirs.active, id);
      if (isTerminal(written.state)) {
        removePrivateFile(marker);
        this.release(id);
      } else {
        if (isTerminal(current.state)) touchPrivateFile(marker);
        this.reserve(id, text);
      }
    } finally {
      held.release({ keepSpare: written === undefined || !isTerminal(written.state) });
    }
    return written;
  }

  /** Forget a job under its lock: its record, its settings, its active marker and spare room. */
  async removeJob(id: string): Promise<boolean> {
    if (!JOB_ID.test(id) || !this.ledger.verify() || !this.shard(id, false)) return false;
    this.ledger.ensure();
    const held = await lock(join(this.dirs.locks, `${id}.lock`), {
      ttlMs: JOB_LOCK_TTL_MS,
      timeoutMs: 30_000,
    });
    try {
      const path = this.jobPath(id);
      removePrivateFile(settingsPath(path));
      removePrivateFile(join(this.dirs.active, id));
      this.release(id);
      return removePrivateFile(path);
    } catch (error) {
      throw storeError('remove', this.jobPath(id), error);
    } finally {
      held.release({ keepSpare: false });
    }
  }

  async saveJobSettings(id: string, text: string): Promise<void> {
    if (!JOB_ID.test(id) || !this.ledger.verify() || this.readJob(id) === undefined)
      throw new YonderError('E_NO_SUCH_JOB', `No job with id ${id}.`);
    const path = settingsPath(this.jobPath(id));
    try {
      writePrivateFileAtomic(path, text);
    } catch (error) {
      throw storeError('write', path, error);
    }
  }

  async getJobSettings(id: string): Promise<string | undefined> {
    if (!JOB_ID.test(id) || !this.ledger.verify() || !this.shard(id, false)) return undefined;
    const path = settingsPath(this.jobPath(id));
    try {
      return readPrivateFile(path, MAX_SETTINGS_FILE_BYTES);
    } catch (error) {
      throw storeError('read', path, error);
    }
  }

  async listJobs(options: ListJobsOptionsV1 = {}): Promise<ListJobsResultV1> {
    if (!this.ledger.verify()) return { jobs: [], problems: [] };
    if (options.activeOnly) return this.listActive();
    if (options.limit !== undefined) return this.listRecent(options.limit);
    const { ids, problems } = this.ledger.jobIds();
    const result = this.collect(ids);
    return { jobs: result.jobs, problems: [...problems, ...result.problems] };
  }

  /** Every job, cheap to show: finished ones from the listing index (see `readListing`). */
  async listing(options: ListingOptionsV1 = {}): Promise<ListingV1> {
    if (!this.ledger.verify()) return { entries: [], problems: [], close: () => {} };
    return readListing({ location: this.location, ledger: this.ledger }, options);
  }

  private collect(ids: Iterable<string>): ListJobsResultV1 {
    const jobs: JobRecord[] = [];
    const problems: StoreProblemV1[] = [];
    const shards = new Map<string, boolean>();
    for (const id of ids) {
      try {
        const job = this.readJob(id, shards);
        if (job) jobs.push(job);
      } catch (error) {
        problems.push({
          location: problemLocation(error, this.jobPath(id)),
          message: (error as Error).message,
        });
      }
    }
    jobs.sort(byNewest);
    return { jobs, problems };
  }

  private listActive(): ListJobsResultV1 {
    const names = this.ledger.entries(this.dirs.active).filter((name) => JOB_ID.test(name));
    const result = this.collect(names);
    const found = new Set(result.jobs.map((job) => job.id));
    const failed = new Set(result.problems.map((problem) => problem.location));
    // Markers left by a crash: a record that is terminal, or no record at all after a minute
    // (an mtime in the future is not "after a minute").
    const now = Date.now();
    for (const name of names) {
      if (found.has(name) || failed.has(this.jobPath(name))) continue;
      const marker = join(this.dirs.active, name);
      try {
        const age = now - statSync(marker).mtimeMs;
        if (age > 60_000) removePrivateFile(marker);
      } catch {}
    }
    const active = result.jobs.filter((job) => {
      if (!isTerminal(job.state)) return true;
      removePrivateFile(join(this.dirs.active, job.id));
      return false;
    });
    return { jobs: active, problems: result.problems };
  }

  private listRecent(limit: number): ListJobsResultV1 {
    if (limit <= 0) return { jobs: [], problems: [] };
    const path = join(this.location, 'index.log');
    let ids: string[];
    try {
      ids = recentIds(path, limit);
    } catch (error) {
      if (UntrustedPathError.isInstance(error) || YonderError.isInstance(error)) throw error;
      throw storeError('read', path, error);
    }
    return this.collect(ids);
  }

  // ------------------------------------------------------------- leases

  private leasePath(key: string): string {
    return join(this.dirs.leases, `${encodeURIComponent(key)}.lock`);
  }

  private leaseInfoPath(key: string): string {
    return join(this.dirs.leases, `${encodeURIComponent(key)}.json`);
  }

  private lastCompleted(key: string): string | null {
    try {
      const text = readPrivateFile(this.leaseInfoPath(key), 64 * 1024);
      if (text === undefined) return null;
      const parsed = parseJson(text);
      const value = parsed.ok ? (parsed.value as { lastCompletedAt?: unknown } | null) : null;
      return typeof value?.lastCompletedAt === 'string' ? value.lastCompletedAt : null;
    } catch {
      return null;
    }
  }

  async tryLease(key: string, ttlMs: number): Promise<LeaseV1 | undefined> {
    this.ledger.ensure();
    const path = this.leasePath(key);
    let held: ReturnType<typeof tryLock>;
    try {
      held = tryLock(path, ttlMs, { spare: `${path}.spare` });
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      // The disk is full and this lease has no room set aside yet. Sharing a poll is an
      // economy: the caller goes on without the lease (polls alone) rather than not at all,
      // so a job that ended on the full disk is still seen to end.
      return { key, lastCompletedAt: this.lastCompleted(key), release: async () => {} };
    }
    if (!held) return undefined;
    const lastCompletedAt = this.lastCompleted(key);
    return {
      key,
      lastCompletedAt,
      release: async (options = {}) => {
        try {
          if (options.completed) {
            const info = this.leaseInfoPath(key);
            // Shared with the processes running now, not kept for after a crash: one lost
            // means one more poll, so no fsync (two of them were most of a status's writes).
            writePrivateFileAtomic(
              info,
              `${JSON.stringify({ lastCompletedAt: new Date().toISOString() })}\n`,
              { spare: `${info}.spare`, sync: false },
            );
            reserveSpareFile(`${info}.spare`, LEASE_INFO_SPARE_BYTES);
          }
        } catch (error) {
          // A full disk: the completion goes unrecorded, which costs one more poll, no more.
          if (!isDiskFull(error)) throw error;
        } finally {
          held.release();
        }
      },
    };
  }

  async waitForLease(key: string, timeoutMs: number): Promise<string | null> {
    if (!this.ledger.verify()) return null;
    await waitForUnlock(this.leasePath(key), timeoutMs);
    return this.lastCompleted(key);
  }

  async close(): Promise<void> {}
}

/** Open the file ledger at a state directory. */
export function createFsStore(options: FsStoreOptions): StoreV1 {
  return new FsStore(options);
}
