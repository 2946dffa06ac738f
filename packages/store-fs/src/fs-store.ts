/** The file ledger (`StoreV1`): profiles, job records and poll leases under a private state directory. */
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertValid,
  checkPrivateEntry,
  checkTrustedPath,
  createPrivateFile,
  ensureTrustedDirectory,
  isTerminal,
  type JobRecord,
  type LeaseV1,
  type ListJobsOptionsV1,
  type ListJobsResultV1,
  type Profile,
  parseJson,
  readPrivateFile,
  removePrivateFile,
  reserveSpareFile,
  type StoreProblemV1,
  type StoreV1,
  touchPrivateFile,
  UntrustedPathError,
  validateProfileFields,
  writePrivateFileAtomic,
  YonderError,
} from '@yonder/core';
import { LOCK_BYTES, lock, tryLock, waitForUnlock } from './file-lock.js';
import { appendIndex, recentIds } from './ledger-index.js';
import {
  byNewest,
  JOB_ID,
  MAX_PROFILE_BYTES,
  MAX_RECORD_BYTES,
  parseJobText,
  parseProfileText,
  problemLocation,
  profileKey,
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

type LedgerDirectory = 'jobs' | 'active' | 'profiles' | 'locks' | 'leases';
const LEDGER_DIRECTORIES: readonly LedgerDirectory[] = [
  'jobs',
  'active',
  'profiles',
  'locks',
  'leases',
];
/** Directories other parts of yonder keep in the state directory, checked when they exist. */
const OTHER_DIRECTORIES = ['cache', 'runs'];

const STATE_DIRECTORY = { role: 'the state directory', type: 'directory' } as const;

/** Room set aside, per active job, so that what happened to it can be recorded on a full disk. */
function recordSpare(path: string): string {
  const at = path.lastIndexOf('/');
  return `${path.slice(0, at)}/.${path.slice(at + 1)}.spare`;
}

/**
 * The ledger as files under the state directory:
 * `jobs/<id[0:2]>/<id>.json` (one record per job, replaced atomically under a per-job lock),
 * `active/<id>` (a marker per non-terminal job, so listing active jobs reads only those),
 * `index.log` (append-only creation order, read from the end for recent jobs),
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
  private readonly dirs: Record<LedgerDirectory, string>;
  private verified = false;
  private ready = false;

  constructor(options: FsStoreOptions) {
    this.location = options.location;
    this.dirs = {
      jobs: join(this.location, 'jobs'),
      active: join(this.location, 'active'),
      profiles: join(this.location, 'profiles'),
      locks: join(this.location, 'locks'),
      leases: join(this.location, 'leases'),
    };
  }

  /**
   * Check the state directory and the directories of it that exist, before anything is read.
   * False when there is no state directory yet (nothing to read).
   * @throws UntrustedPathError `E_UNTRUSTED_PATH`.
   */
  private verify(): boolean {
    if (this.verified) return true;
    let exists: boolean;
    try {
      exists = checkTrustedPath(this.location, STATE_DIRECTORY);
      if (!exists) return false;
      for (const name of [...LEDGER_DIRECTORIES, ...OTHER_DIRECTORIES]) {
        checkPrivateEntry(join(this.location, name), {
          role: `the ledger's ${name} directory`,
          type: 'directory',
        });
      }
    } catch (error) {
      throw storeError('check', this.location, error);
    }
    this.verified = true;
    return true;
  }

  /** Make the state directory and the ledger's directories (0700) where missing, checked. */
  private ensure(): void {
    if (this.ready) return;
    try {
      ensureTrustedDirectory(this.location, STATE_DIRECTORY);
      this.verified = false;
      this.verify();
      for (const dir of Object.values(this.dirs)) this.ensureDirectory(dir);
    } catch (error) {
      throw storeError('create the state directory', this.location, error);
    }
    this.ready = true;
  }

  /** Make one directory inside a checked one (0700), or check the one there. */
  private ensureDirectory(dir: string): void {
    const wanted = { role: 'a directory of the ledger', type: 'directory' } as const;
    if (checkPrivateEntry(dir, wanted)) return;
    try {
      // Not recursive: Node's recursive mkdir reports a read-only file system as ENOENT.
      mkdirSync(dir, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    checkPrivateEntry(dir, wanted);
  }

  private jobPath(id: string): string {
    return join(this.dirs.jobs, id.slice(0, 2), `${id}.json`);
  }

  private profilePath(name: string): string {
    return join(this.dirs.profiles, `${profileKey(name)}.json`);
  }

  /** Entries of a ledger directory; none when it does not exist. */
  private entries(dir: string): string[] {
    try {
      return readdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw storeError('read', dir, error);
    }
  }

  // ------------------------------------------------------------- profiles

  async saveProfile(profile: Profile): Promise<void> {
    assertValid(
      'E_INVALID_PROFILE',
      `Profile "${String(profile?.name)}" is invalid`,
      validateProfileFields(profile),
    );
    this.ensure();
    const path = this.profilePath(profile.name);
    try {
      writePrivateFileAtomic(path, `${JSON.stringify(profile, null, 2)}\n`);
    } catch (error) {
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
    if (!this.verify()) return undefined;
    return this.readProfile(this.profilePath(name), profileKey(name));
  }

  async listProfiles(): Promise<{ profiles: Profile[]; problems: StoreProblemV1[] }> {
    const profiles: Profile[] = [];
    const problems: StoreProblemV1[] = [];
    if (!this.verify()) return { profiles, problems };
    for (const name of this.entries(this.dirs.profiles)) {
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
    if (!this.verify()) return false;
    return removePrivateFile(this.profilePath(name));
  }

  // ------------------------------------------------------------- jobs

  /** A job's shard directory, checked (and made when `create`); false when it is not there. */
  private shard(id: string, create: boolean): boolean {
    const dir = join(this.dirs.jobs, id.slice(0, 2));
    if (create) {
      this.ensureDirectory(dir);
      return true;
    }
    return checkPrivateEntry(dir, { role: 'a directory of the ledger', type: 'directory' });
  }

  /** Set room aside for the job's next record and lock (best effort: a full disk skips it). */
  private reserve(id: string, text: string): void {
    reserveSpareFile(
      recordSpare(this.jobPath(id)),
      Math.max(MIN_RECORD_SPARE_BYTES, 2 * Buffer.byteLength(text)),
    );
    reserveSpareFile(this.lockSpare(id), LOCK_BYTES);
  }

  private release(id: string): void {
    removePrivateFile(recordSpare(this.jobPath(id)));
    removePrivateFile(this.lockSpare(id));
  }

  private lockSpare(id: string): string {
    return join(this.dirs.locks, `.${id}.lock.spare`);
  }

  async createJob(job: JobRecord): Promise<void> {
    if (!JOB_ID.test(job.id))
      throw new YonderError('E_STORE', `"${job.id}" is not a valid job id.`);
    this.ensure();
    const path = this.jobPath(job.id);
    const marker = join(this.dirs.active, job.id);
    const text = `${JSON.stringify(job)}\n`;
    try {
      this.shard(job.id, true);
      if (!isTerminal(job.state)) {
        touchPrivateFile(marker);
        this.reserve(job.id, text);
      }
      createPrivateFile(path, text);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new YonderError('E_STORE', `A job with id ${job.id} already exists.`, {
          cause: error,
        });
      }
      removePrivateFile(marker);
      this.release(job.id);
      throw storeError('write', path, error);
    }
    const index = join(this.location, 'index.log');
    try {
      appendIndex(index, job.createdAt, job.id);
    } catch (error) {
      throw storeError('append to', index, error);
    }
  }

  private readJob(id: string): JobRecord | undefined {
    const path = this.jobPath(id);
    let text: string | undefined;
    try {
      if (!this.shard(id, false)) return undefined;
      text = readPrivateFile(path, MAX_RECORD_BYTES);
    } catch (error) {
      throw storeError('read', path, error);
    }
    return text === undefined ? undefined : parseJobText(path, text, id);
  }

  async getJob(id: string): Promise<JobRecord | undefined> {
    if (!JOB_ID.test(id) || !this.verify()) return undefined;
    return this.readJob(id);
  }

  /** The job ids of every shard (or of one), with the shards that could not be trusted. */
  private ids(only?: string): { ids: string[]; problems: StoreProblemV1[] } {
    const ids: string[] = [];
    const problems: StoreProblemV1[] = [];
    const shards = only
      ? [only]
      : this.entries(this.dirs.jobs).filter((name) => !name.startsWith('.'));
    for (const shard of shards) {
      const dir = join(this.dirs.jobs, shard);
      try {
        if (!checkPrivateEntry(dir, { role: 'a directory of the ledger', type: 'directory' }))
          continue;
      } catch (error) {
        problems.push({ location: dir, message: (error as Error).message });
        continue;
      }
      for (const name of this.entries(dir)) {
        if (!name.endsWith('.json') || name.startsWith('.')) continue;
        const id = name.slice(0, -5);
        if (JOB_ID.test(id) && id.startsWith(shard)) ids.push(id);
      }
    }
    return { ids, problems };
  }

  async findJobIds(prefix: string): Promise<string[]> {
    if (!this.verify()) return [];
    const wanted = prefix.toLowerCase();
    const { ids } = this.ids(wanted.length >= 2 ? wanted.slice(0, 2) : undefined);
    return ids.filter((id) => id.startsWith(wanted)).sort();
  }

  async updateJob(
    id: string,
    change: (job: JobRecord) => JobRecord | undefined,
  ): Promise<JobRecord> {
    this.ensure();
    const held = await lock(join(this.dirs.locks, `${id}.lock`), {
      ttlMs: JOB_LOCK_TTL_MS,
      timeoutMs: 30_000,
      spare: this.lockSpare(id),
    });
    let written: JobRecord;
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
      held.release();
    }
    return written;
  }

  async listJobs(options: ListJobsOptionsV1 = {}): Promise<ListJobsResultV1> {
    if (!this.verify()) return { jobs: [], problems: [] };
    if (options.activeOnly) return this.listActive();
    if (options.limit !== undefined) return this.listRecent(options.limit);
    const { ids, problems } = this.ids();
    const result = this.collect(ids);
    return { jobs: result.jobs, problems: [...problems, ...result.problems] };
  }

  private collect(ids: Iterable<string>): ListJobsResultV1 {
    const jobs: JobRecord[] = [];
    const problems: StoreProblemV1[] = [];
    for (const id of ids) {
      try {
        const job = this.readJob(id);
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
    const names = this.entries(this.dirs.active).filter((name) => JOB_ID.test(name));
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
    this.ensure();
    const path = this.leasePath(key);
    const held = tryLock(path, ttlMs, { spare: `${path}.spare` });
    if (!held) return undefined;
    const lastCompletedAt = this.lastCompleted(key);
    return {
      key,
      lastCompletedAt,
      release: async (options = {}) => {
        try {
          if (options.completed) {
            const info = this.leaseInfoPath(key);
            writePrivateFileAtomic(
              info,
              `${JSON.stringify({ lastCompletedAt: new Date().toISOString() })}\n`,
              { spare: `${info}.spare` },
            );
            reserveSpareFile(`${info}.spare`, LEASE_INFO_SPARE_BYTES);
          }
        } finally {
          held.release();
        }
      },
    };
  }

  async waitForLease(key: string, timeoutMs: number): Promise<string | null> {
    if (!this.verify()) return null;
    await waitForUnlock(this.leasePath(key), timeoutMs);
    return this.lastCompleted(key);
  }

  async close(): Promise<void> {}
}

/** Open the file ledger at a state directory. */
export function createFsStore(options: FsStoreOptions): StoreV1 {
  return new FsStore(options);
}
