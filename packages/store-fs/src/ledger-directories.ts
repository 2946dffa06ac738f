/** The state directory's own directories, each checked before it is read from and made private (0700) when missing. */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreProblemV1 } from '@yonder/core';
import {
  checkPrivateEntry,
  checkTrustedPath,
  ensureTrustedDirectory,
} from '@yonder/core/backend-kit';
import { JOB_ID, storeError } from './records.js';

export type LedgerDirectory = 'jobs' | 'active' | 'profiles' | 'locks' | 'leases';
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
const OWN_DIRECTORY = { role: 'a directory of the ledger', type: 'directory' } as const;

/**
 * The state directory and the ledger's directories in it. Nothing is read before `verify`
 * (or written before `ensure`) has checked the state directory — it and every directory above
 * it the user's (or root's, above it), written by no one else, a sticky /tmp aside — and each
 * of the ledger's directories that exists: the user's, 0700-like, and no link in its place.
 */
export class LedgerDirectories {
  readonly paths: Record<LedgerDirectory, string>;
  private verified = false;
  private ready = false;

  constructor(readonly location: string) {
    this.paths = {
      jobs: join(location, 'jobs'),
      active: join(location, 'active'),
      profiles: join(location, 'profiles'),
      locks: join(location, 'locks'),
      leases: join(location, 'leases'),
    };
  }

  /**
   * Check the state directory and those of its directories that exist. False when there is
   * no state directory yet (so nothing to read).
   * @throws UntrustedPathError `E_UNTRUSTED_PATH`; YonderError `E_STORE`.
   */
  verify(): boolean {
    if (this.verified) return true;
    try {
      if (!checkTrustedPath(this.location, STATE_DIRECTORY)) return false;
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
  ensure(): void {
    if (this.ready) return;
    try {
      ensureTrustedDirectory(this.location, STATE_DIRECTORY);
      this.verified = false;
      this.verify();
      for (const dir of Object.values(this.paths)) this.ensureDirectory(dir);
    } catch (error) {
      throw storeError('create the state directory', this.location, error);
    }
    this.ready = true;
  }

  /** Make one directory inside a checked one (0700), or check the one there. */
  ensureDirectory(dir: string): void {
    if (checkPrivateEntry(dir, OWN_DIRECTORY)) return;
    try {
      // Not recursive: Node's recursive mkdir reports a read-only file system as ENOENT.
      mkdirSync(dir, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    checkPrivateEntry(dir, OWN_DIRECTORY);
  }

  /** Whether a directory inside the ledger is there, checked. */
  has(dir: string): boolean {
    return checkPrivateEntry(dir, OWN_DIRECTORY);
  }

  /** Entries of a ledger directory; none when it does not exist. */
  entries(dir: string): string[] {
    try {
      return readdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw storeError('read', dir, error);
    }
  }

  /**
   * The shard directories of the jobs directory (or the one named), each checked; those that
   * could not be trusted are added to `problems` and left out.
   */
  shards(problems: StoreProblemV1[], only?: string): Array<{ shard: string; dir: string }> {
    const shards: Array<{ shard: string; dir: string }> = [];
    const names = only
      ? [only]
      : this.entries(this.paths.jobs).filter((name) => !name.startsWith('.'));
    for (const shard of names) {
      const dir = join(this.paths.jobs, shard);
      try {
        if (this.has(dir)) shards.push({ shard, dir });
      } catch (error) {
        problems.push({ location: dir, message: (error as Error).message });
      }
    }
    return shards;
  }

  /** The job ids of every shard (or of one), with the shards that could not be trusted. */
  jobIds(only?: string): { ids: string[]; problems: StoreProblemV1[] } {
    const ids: string[] = [];
    const problems: StoreProblemV1[] = [];
    for (const { shard, dir } of this.shards(problems, only)) {
      for (const name of this.entries(dir)) {
        if (!name.endsWith('.json') || name.startsWith('.')) continue;
        const id = name.slice(0, -5);
        if (JOB_ID.test(id) && id.startsWith(shard)) ids.push(id);
      }
    }
    return { ids, problems };
  }
}
