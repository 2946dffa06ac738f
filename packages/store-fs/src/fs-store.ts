import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CorruptRecordError,
  getErrorMessage,
  type JobRecord,
  type LeaseV1,
  type ListJobsOptionsV1,
  type ListJobsResultV1,
  type Profile,
  type StoreProblemV1,
  type StoreV1,
  YonderError,
} from '@yonder/core';
import {
  assertValid,
  isJobState,
  isTerminal,
  validateProfileFields,
} from '@yonder/core/backend-kit';
import { createFileAtomic, writeFileAtomic } from './atomic-write.js';
import { isLocked, lock, tryLock } from './file-lock.js';

const JOB_ID = /^[0-9a-f]{6,64}$/;
const INDEX_CHUNK = 64 * 1024;

export interface FsStoreOptions {
  /** The state directory; see `resolveStateDirectory`. */
  location: string;
}

function storeError(action: string, path: string, error: unknown): YonderError {
  const code = (error as NodeJS.ErrnoException).code;
  const hint =
    code === 'ENOSPC'
      ? ' The disk is full; free space and try again.'
      : code === 'EROFS' || code === 'EACCES' || code === 'EPERM'
        ? ' The state directory is not writable; fix its permissions or set YONDER_STATE_DIR.'
        : '';
  return new YonderError(
    'E_STORE',
    `Could not ${action} ${path}: ${getErrorMessage(error)}.${hint}`,
    { cause: error },
  );
}

function profileKey(name: string): string {
  return encodeURIComponent(name.toLowerCase());
}

function parseJob(path: string, text: string): JobRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CorruptRecordError(path, `not valid JSON (${getErrorMessage(error)})`, error);
  }
  const job = value as JobRecord;
  if (
    typeof job !== 'object' ||
    job === null ||
    typeof job.id !== 'string' ||
    !isJobState(job.state) ||
    !Array.isArray(job.history)
  ) {
    throw new CorruptRecordError(path, 'not a job record (missing id, state or history)');
  }
  return job;
}

function byNewest(a: JobRecord, b: JobRecord): number {
  return a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1;
}

/**
 * The ledger as files under the state directory:
 * `jobs/<id[0:2]>/<id>.json` (one record per job, replaced atomically under a per-job lock),
 * `active/<id>` (a marker per non-terminal job, so listing active jobs reads only those),
 * `index.log` (append-only creation order, read from the end for recent jobs),
 * `profiles/<name>.json`, and `leases/` for shared polls.
 */
export class FsStore implements StoreV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'fs';
  readonly location: string;
  private readonly dirs: {
    jobs: string;
    active: string;
    profiles: string;
    locks: string;
    leases: string;
  };
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

  private ensure(): void {
    if (this.ready) return;
    try {
      mkdirSync(this.location, { recursive: true, mode: 0o700 });
      for (const dir of Object.values(this.dirs)) mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw storeError('create the state directory', this.location, error);
    }
    this.ready = true;
  }

  private jobPath(id: string): string {
    return join(this.dirs.jobs, id.slice(0, 2), `${id}.json`);
  }

  // ------------------------------------------------------------- profiles

  async saveProfile(profile: Profile): Promise<void> {
    assertValid(
      'E_INVALID_PROFILE',
      `Profile "${String(profile?.name)}" is invalid`,
      validateProfileFields(profile),
    );
    this.ensure();
    const path = join(this.dirs.profiles, `${profileKey(profile.name)}.json`);
    try {
      writeFileAtomic(path, `${JSON.stringify(profile, null, 2)}\n`);
    } catch (error) {
      throw storeError('write', path, error);
    }
  }

  async getProfile(name: string): Promise<Profile | undefined> {
    const path = join(this.dirs.profiles, `${profileKey(name)}.json`);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw storeError('read', path, error);
    }
    try {
      return JSON.parse(text) as Profile;
    } catch (error) {
      throw new CorruptRecordError(path, `not valid JSON (${getErrorMessage(error)})`, error);
    }
  }

  async listProfiles(): Promise<{ profiles: Profile[]; problems: StoreProblemV1[] }> {
    const profiles: Profile[] = [];
    const problems: StoreProblemV1[] = [];
    let names: string[] = [];
    try {
      names = readdirSync(this.dirs.profiles).filter(
        (name) => name.endsWith('.json') && !name.startsWith('.'),
      );
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        throw storeError('read', this.dirs.profiles, error);
    }
    for (const name of names) {
      const path = join(this.dirs.profiles, name);
      try {
        profiles.push(JSON.parse(readFileSync(path, 'utf8')) as Profile);
      } catch (error) {
        problems.push({ location: path, message: `Corrupt profile: ${getErrorMessage(error)}` });
      }
    }
    profiles.sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()));
    return { profiles, problems };
  }

  async removeProfile(name: string): Promise<boolean> {
    try {
      unlinkSync(join(this.dirs.profiles, `${profileKey(name)}.json`));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw storeError('remove', name, error);
    }
  }

  // ------------------------------------------------------------- jobs

  async createJob(job: JobRecord): Promise<void> {
    if (!JOB_ID.test(job.id))
      throw new YonderError('E_STORE', `"${job.id}" is not a valid job id.`);
    this.ensure();
    const path = this.jobPath(job.id);
    const marker = join(this.dirs.active, job.id);
    try {
      try {
        // Not recursive: the jobs directory exists, and Node's recursive mkdir reports a
        // read-only file system as ENOENT.
        mkdirSync(join(this.dirs.jobs, job.id.slice(0, 2)), { mode: 0o700 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (!isTerminal(job.state)) closeSync(openSync(marker, 'w', 0o600));
      createFileAtomic(path, `${JSON.stringify(job)}\n`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new YonderError('E_STORE', `A job with id ${job.id} already exists.`, {
          cause: error,
        });
      }
      try {
        unlinkSync(marker);
      } catch {}
      throw storeError('write', path, error);
    }
    this.appendIndex(job);
  }

  private appendIndex(job: JobRecord): void {
    const path = join(this.location, 'index.log');
    try {
      const fd = openSync(path, 'a', 0o600);
      try {
        // A leading newline isolates any line a crash left unfinished.
        writeSync(fd, `\n${job.createdAt}\t${job.id}\n`);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      throw storeError('append to', path, error);
    }
  }

  private readJob(id: string): JobRecord | undefined {
    const path = this.jobPath(id);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw storeError('read', path, error);
    }
    return parseJob(path, text);
  }

  async getJob(id: string): Promise<JobRecord | undefined> {
    if (!JOB_ID.test(id)) return undefined;
    return this.readJob(id);
  }

  async findJobIds(prefix: string): Promise<string[]> {
    const wanted = prefix.toLowerCase();
    const shards = wanted.length >= 2 ? [wanted.slice(0, 2)] : this.shards();
    const ids: string[] = [];
    for (const shard of shards) {
      let names: string[];
      try {
        names = readdirSync(join(this.dirs.jobs, shard));
      } catch {
        continue;
      }
      for (const name of names) {
        if (!name.endsWith('.json') || name.startsWith('.')) continue;
        const id = name.slice(0, -5);
        if (id.startsWith(wanted)) ids.push(id);
      }
    }
    return ids.sort();
  }

  private shards(): string[] {
    try {
      return readdirSync(this.dirs.jobs).filter((name) => !name.startsWith('.'));
    } catch {
      return [];
    }
  }

  async updateJob(
    id: string,
    change: (job: JobRecord) => JobRecord | undefined,
  ): Promise<JobRecord> {
    this.ensure();
    const held = await lock(join(this.dirs.locks, `${id}.lock`), {
      ttlMs: 60_000,
      timeoutMs: 30_000,
    });
    try {
      const current = this.readJob(id);
      if (!current) throw new YonderError('E_NO_SUCH_JOB', `No job with id ${id}.`);
      const next = change(current);
      if (next === undefined || next === current) return current;
      const written: JobRecord = {
        ...next,
        id: current.id,
        revision: current.revision + 1,
        updatedAt: new Date().toISOString(),
      };
      const path = this.jobPath(id);
      try {
        writeFileAtomic(path, `${JSON.stringify(written)}\n`);
      } catch (error) {
        throw storeError('write', path, error);
      }
      const marker = join(this.dirs.active, id);
      if (isTerminal(written.state)) {
        try {
          unlinkSync(marker);
        } catch {}
      } else if (isTerminal(current.state)) {
        closeSync(openSync(marker, 'w', 0o600));
      }
      return written;
    } finally {
      held.release();
    }
  }

  async listJobs(options: ListJobsOptionsV1 = {}): Promise<ListJobsResultV1> {
    if (options.activeOnly) return this.listActive();
    if (options.limit !== undefined) return this.listRecent(options.limit);
    return this.listAll();
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
          location:
            CorruptRecordError.isInstance(error) && 'path' in error
              ? String(error.path)
              : this.jobPath(id),
          message: getErrorMessage(error),
        });
      }
    }
    jobs.sort(byNewest);
    return { jobs, problems };
  }

  private listActive(): ListJobsResultV1 {
    let names: string[];
    try {
      names = readdirSync(this.dirs.active);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { jobs: [], problems: [] };
      throw storeError('read', this.dirs.active, error);
    }
    const result = this.collect(names.filter((name) => JOB_ID.test(name)));
    const now = Date.now();
    const found = new Set(result.jobs.map((job) => job.id));
    const failed = new Set(result.problems.map((problem) => problem.location));
    // Markers left by a crash: a record that is terminal, or no record at all after a minute.
    for (const name of names) {
      if (!JOB_ID.test(name) || failed.has(this.jobPath(name))) continue;
      const marker = join(this.dirs.active, name);
      try {
        if (!found.has(name) && now - statSync(marker).mtimeMs > 60_000) unlinkSync(marker);
      } catch {}
    }
    const active = result.jobs.filter((job) => {
      if (!isTerminal(job.state)) return true;
      try {
        unlinkSync(join(this.dirs.active, job.id));
      } catch {}
      return false;
    });
    return { jobs: active, problems: result.problems };
  }

  private listRecent(limit: number): ListJobsResultV1 {
    if (limit <= 0) return { jobs: [], problems: [] };
    const path = join(this.location, 'index.log');
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { jobs: [], problems: [] };
      throw storeError('read', path, error);
    }
    const ids: string[] = [];
    const seen = new Set<string>();
    try {
      const size = fstatSync(fd).size;
      let end = size;
      let carry = '';
      while (end > 0 && ids.length < limit) {
        const start = Math.max(0, end - INDEX_CHUNK);
        const buffer = Buffer.alloc(end - start);
        readSync(fd, buffer, 0, buffer.length, start);
        const text = buffer.toString('utf8') + carry;
        const lines = text.split('\n');
        carry = start > 0 ? (lines.shift() ?? '') : '';
        for (let index = lines.length - 1; index >= 0 && ids.length < limit; index -= 1) {
          const id = (lines[index] as string).split('\t')[1];
          if (id && JOB_ID.test(id) && !seen.has(id)) {
            seen.add(id);
            ids.push(id);
          }
        }
        end = start;
      }
    } finally {
      closeSync(fd);
    }
    return this.collect(ids);
  }

  private listAll(): ListJobsResultV1 {
    const ids: string[] = [];
    for (const shard of this.shards()) {
      let names: string[];
      try {
        names = readdirSync(join(this.dirs.jobs, shard));
      } catch {
        continue;
      }
      for (const name of names)
        if (name.endsWith('.json') && !name.startsWith('.')) ids.push(name.slice(0, -5));
    }
    return this.collect(ids);
  }

  // ------------------------------------------------------------- leases

  private leaseInfoPath(key: string): string {
    return join(this.dirs.leases, `${encodeURIComponent(key)}.json`);
  }

  private lastCompleted(key: string): string | null {
    try {
      const value = JSON.parse(readFileSync(this.leaseInfoPath(key), 'utf8')) as {
        lastCompletedAt?: unknown;
      };
      return typeof value.lastCompletedAt === 'string' ? value.lastCompletedAt : null;
    } catch {
      return null;
    }
  }

  async tryLease(key: string, ttlMs: number): Promise<LeaseV1 | undefined> {
    this.ensure();
    const held = tryLock(join(this.dirs.leases, `${encodeURIComponent(key)}.lock`), ttlMs);
    if (!held) return undefined;
    const lastCompletedAt = this.lastCompleted(key);
    return {
      key,
      lastCompletedAt,
      release: async (options = {}) => {
        try {
          if (options.completed) {
            writeFileAtomic(
              this.leaseInfoPath(key),
              `${JSON.stringify({ lastCompletedAt: new Date().toISOString() })}\n`,
            );
          }
        } finally {
          held.release();
        }
      },
    };
  }

  async waitForLease(key: string, timeoutMs: number): Promise<string | null> {
    const path = join(this.dirs.leases, `${encodeURIComponent(key)}.lock`);
    const deadline = Date.now() + timeoutMs;
    let delay = 5;
    while (isLocked(path) && Date.now() < deadline) {
      await sleep(delay);
      delay = Math.min(delay * 2, 100);
    }
    return this.lastCompleted(key);
  }

  async close(): Promise<void> {}
}

/** Open the file ledger at a state directory. */
export function createFsStore(options: FsStoreOptions): StoreV1 {
  return new FsStore(options);
}
