/**
 * A lock on disk: a directory holding one fixed-size `holder` file, put in place by rename().
 * rename() of a directory onto a path that holds a non-empty directory (or a file) fails, so
 * taking it is exclusive; and since it needs no new inode or link, a lock kept aside beforehand
 * (a spare) can still be taken on a full disk, even on tmpfs where every link costs an inode.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmdirSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { checkPrivateEntry, readPrivateFile, removePrivateFile } from '@yonder/core/backend-kit';

/** Every holder file has this size (JSON padded with spaces), so it is rewritten in place. */
export const LOCK_BYTES = 512;
const HOLDER = 'holder';
const WRITE = constants.O_WRONLY | constants.O_NOFOLLOW;
const CREATE = WRITE | constants.O_CREAT | constants.O_EXCL;

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

/** The holder's text at `path`, '' when it cannot be read yet; 'missing' when nothing is there. */
export function readEntry(path: string): string | 'missing' {
  try {
    if (!checkPrivateEntry(path, { role: 'a lock of the ledger' })) return 'missing';
    // A plain file is a lock as yonder made them before (read, and broken, the same way).
    const file = lstatSync(path).isDirectory() ? join(path, HOLDER) : path;
    return readPrivateFile(file, 64 * 1024) ?? '';
  } catch (error) {
    // Released or broken while we looked: there is none now.
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return 'missing';
    throw error;
  }
}

/** Write `text` (LOCK_BYTES long) over the holder file of the entry at `path`. */
export function rewriteEntry(path: string, text: string): void {
  const fd = openSync(join(path, HOLDER), WRITE);
  try {
    writeSync(fd, text, 0);
  } finally {
    closeSync(fd);
  }
}

/** Remove the entry at `path` (a lock directory or a lock file), looking before each unlink. */
export function removeEntry(path: string): void {
  let directory: boolean;
  try {
    const info = lstatSync(path);
    directory = info.isDirectory() && !info.isSymbolicLink();
  } catch {
    return;
  }
  if (!directory) {
    removePrivateFile(path);
    return;
  }
  removePrivateFile(join(path, HOLDER));
  try {
    rmdirSync(path);
  } catch {
    /* not empty (not ours after all) or gone */
  }
}

/** A new entry holding `text`, made beside `path`; its path. */
function makeEntry(path: string, text: string): string {
  const staging = `${path}.${randomBytes(6).toString('hex')}.new`;
  mkdirSync(staging, { mode: 0o700 });
  try {
    const fd = openSync(join(staging, HOLDER), CREATE, 0o600);
    try {
      writeSync(fd, text, 0);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    removeEntry(staging);
    throw error;
  }
  return staging;
}

/**
 * Put an entry holding `text` at `path` unless one is there: the spare when there is one
 * (its inodes set aside earlier), else a new one. False when `path` is taken.
 * @throws the file system's error when no entry can be made (ENOSPC without a spare).
 */
export function placeEntry(path: string, text: string, spare: string | undefined): boolean {
  const taken = spare === undefined ? false : takeSpare(spare, path, text);
  const staging = taken || makeEntry(path, text);
  try {
    renameSync(staging, path);
    return true;
  } catch (error) {
    const code = errno(error);
    if (code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'ENOTDIR' || code === 'EISDIR') {
      // Taken: keep what we moved as the spare again, or drop it.
      if (taken && spare !== undefined) {
        try {
          renameSync(staging, spare);
          return false;
        } catch {}
      }
      removeEntry(staging);
      return false;
    }
    removeEntry(staging);
    throw error;
  }
}

/** The spare moved beside `path` and filled with `text`: its new path, or false when there is none. */
function takeSpare(spare: string, path: string, text: string): string | false {
  const moved = `${path}.${randomBytes(6).toString('hex')}.new`;
  try {
    renameSync(spare, moved);
  } catch {
    return false;
  }
  try {
    rewriteEntry(moved, text);
    return moved;
  } catch {
    removeEntry(moved);
    return false;
  }
}

/**
 * Take the entry at `path` off it: renamed to `spare` when asked (and none is there), so its
 * inodes wait for the next lock, else moved aside and removed. The caller has checked it is ours.
 */
export function takeOffEntry(path: string, spare: string | undefined): void {
  if (spare !== undefined) {
    try {
      renameSync(path, spare);
      return;
    } catch {
      /* a spare is there already: remove ours */
    }
  }
  const aside = `${path}.${randomBytes(6).toString('hex')}.old`;
  try {
    renameSync(path, aside);
  } catch {
    return;
  }
  removeEntry(aside);
}

/**
 * Keep a lock entry aside at `spare`, for a lock to be taken on a full disk. Best effort:
 * false when there is no room now. One already there is kept.
 */
export function reserveEntry(spare: string): boolean {
  if (readEntry(spare) !== 'missing') return true;
  let staging: string;
  try {
    staging = makeEntry(spare, ' '.repeat(LOCK_BYTES));
  } catch {
    return false;
  }
  try {
    renameSync(staging, spare);
    return true;
  } catch {
    removeEntry(staging);
    return readEntry(spare) !== 'missing';
  }
}
