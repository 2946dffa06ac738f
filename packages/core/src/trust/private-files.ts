/**
 * Files in a private directory yonder has checked, never through a link it did not make:
 * creates are exclusive with O_NOFOLLOW, updates are a temporary file in the same directory
 * renamed into place, reads refuse links, other owners and anything but a regular file, and
 * deletes look (lstat) before they unlink.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  linkSync,
  lstatSync,
  openSync,
  readSync,
  renameSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CorruptRecordError } from '../errors/corrupt-record-error.js';
import { UntrustedPathError } from '../errors/untrusted-path-error.js';
import { describeMode, describeUser } from './user-name.js';

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

let ownUid: number | null | undefined;

/** This process's uid (asked once: listing a large ledger checks it for every file). */
function uid(): number | null {
  ownUid ??= typeof process.getuid === 'function' ? process.getuid() : null;
  return ownUid;
}

function refuse(path: string, info: Stats, problem: string): never {
  throw new UntrustedPathError({
    subject: path,
    path,
    owner: info.uid,
    mode: info.mode & 0o7777,
    message: `Refusing ${path}: it ${problem} (owner ${describeUser(info.uid)}, mode ${describeMode(info.mode)}), and yonder uses only files it made itself. Fix: move it aside (mv ${path} ${path}.untrusted).`,
  });
}

/** A file yonder made: a regular file of the user's, written by nobody else. */
function checkOwn(path: string, info: Stats): void {
  const me = uid();
  if (!info.isFile()) refuse(path, info, 'is not a regular file');
  if (me !== null && info.uid !== me) refuse(path, info, 'belongs to another user');
  if ((info.mode & 0o022) !== 0) refuse(path, info, 'is writable by others');
}

/** Refuse a link where a file of yonder's should be (the O_NOFOLLOW open failed with ELOOP). */
function refuseLink(path: string, error: unknown): never {
  const info = lstatSync(path);
  if (info.isSymbolicLink()) refuse(path, info, 'is a symbolic link');
  throw error;
}

/** Write all of `buffer` at the fd's position. */
export function writeAll(fd: number, buffer: Buffer): void {
  let written = 0;
  while (written < buffer.length) written += writeSync(fd, buffer, written);
}

/**
 * Read at most `maxBytes` from an open fd (a file that grows past it meanwhile is cut there).
 * Returns null when there is more than `maxBytes`.
 */
export function readAtMost(fd: number, maxBytes: number): Buffer | null {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buffer = Buffer.alloc(Math.min(64 * 1024, maxBytes + 1 - total));
    const count = readSync(fd, buffer, 0, buffer.length, null);
    if (count === 0) break;
    chunks.push(buffer.subarray(0, count));
    total += count;
    if (total > maxBytes) return null;
  }
  return Buffer.concat(chunks, total);
}

/**
 * A file's text whose size `fstat` gave: one read into a buffer of that size (plus one byte, to
 * see it end) in the common case, never zero-filled; a file still growing is read on as
 * `readAtMost` does. Null when it holds more than `maxBytes`.
 */
function readSized(fd: number, size: number, maxBytes: number): string | null {
  if (size > maxBytes) return null;
  const buffer = Buffer.allocUnsafe(size + 1);
  let total = 0;
  for (;;) {
    const count = readSync(fd, buffer, total, buffer.length - total, null);
    if (count === 0) return buffer.toString('utf8', 0, total);
    total += count;
    // Fuller than fstat said: the file grew while it was read; read the rest in chunks.
    if (total === buffer.length) {
      if (total > maxBytes) return null;
      const rest = readAtMost(fd, maxBytes - total);
      return rest === null ? null : Buffer.concat([buffer, rest]).toString('utf8');
    }
  }
}

/**
 * Read a file yonder keeps in a private directory. Undefined when it does not exist.
 * @throws UntrustedPathError for a link, another owner, anything but a regular file;
 * CorruptRecordError when it is larger than `maxBytes`.
 */
export function readPrivateFile(path: string, maxBytes: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, READ);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    if (errno(error) === 'ELOOP') refuseLink(path, error);
    throw error;
  }
  try {
    const info = fstatSync(fd);
    checkOwn(path, info);
    const bytes = readSized(fd, info.size, maxBytes);
    if (bytes === null)
      throw new CorruptRecordError(path, `larger than ${maxBytes} bytes, more than yonder writes`);
    return bytes;
  } finally {
    closeSync(fd);
  }
}

function temporaryName(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
}

/** How a private file is written: a spare to fall back to on a full disk; whether to fsync. */
export interface PrivateWriteOptions {
  /** A file made by `reserveSpareFile` for this one, used when there is no room for a new file. */
  spare?: string;
  /** fsync before it appears (default true; locks, which need no durability, say false). */
  sync?: boolean;
}

function writeTemporary(path: string, text: string, options: PrivateWriteOptions): string {
  const { spare, sync = true } = options;
  const temporary = temporaryName(path);
  let fd: number;
  try {
    fd = openSync(temporary, CREATE, 0o600);
  } catch (error) {
    // No room for a new file: take the spare made for this (see FsStore), if there is one.
    if ((errno(error) !== 'ENOSPC' && errno(error) !== 'EDQUOT') || spare === undefined)
      throw error;
    return fillSpare(spare, temporary, text, error);
  }
  try {
    writeAll(fd, Buffer.from(text, 'utf8'));
    if (sync) fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    removePrivateFile(temporary);
    if ((errno(error) === 'ENOSPC' || errno(error) === 'EDQUOT') && spare !== undefined)
      return fillSpare(spare, temporary, text, error);
    throw error;
  }
  closeSync(fd);
  return temporary;
}

/**
 * Write `text` over a spare file made earlier (its blocks already allocated), moved to
 * `temporary` first so that no one else takes it meanwhile.
 */
function fillSpare(spare: string, temporary: string, text: string, original: unknown): string {
  try {
    renameSync(spare, temporary);
  } catch {
    throw original;
  }
  const buffer = Buffer.from(text, 'utf8');
  let fd: number | undefined;
  try {
    fd = openSync(temporary, constants.O_WRONLY | constants.O_NOFOLLOW);
    const info = fstatSync(fd);
    checkOwn(temporary, info);
    if (info.size < buffer.length) throw original;
    writeAll(fd, buffer);
    ftruncateSync(fd, buffer.length);
    fsyncSync(fd);
    return temporary;
  } catch (error) {
    removePrivateFile(temporary);
    throw error === original ? original : error;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Replace `path` with `text` atomically (a reader sees the old content or the new, never
 * part): a temporary file in the same directory, fsync, rename. With a `spare`, a full disk
 * falls back to that preallocated file of the caller's.
 */
export function writePrivateFileAtomic(
  path: string,
  text: string,
  options: PrivateWriteOptions = {},
): void {
  const temporary = writeTemporary(path, text, options);
  try {
    renameSync(temporary, path);
  } catch (error) {
    removePrivateFile(temporary);
    throw error;
  }
}

/** Create `path` with `text` atomically, failing with EEXIST if it exists (even as a link). */
export function createPrivateFile(
  path: string,
  text: string,
  options: PrivateWriteOptions = {},
): void {
  const temporary = writeTemporary(path, text, options);
  try {
    linkSync(temporary, path);
  } finally {
    removePrivateFile(temporary);
  }
}

/**
 * Make sure an empty marker file exists at `path`: created exclusively; one already there must
 * be yonder's own, and a link planted in its place is removed (the link, never its target).
 */
export function touchPrivateFile(path: string): void {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      closeSync(openSync(path, CREATE, 0o600));
      return;
    } catch (error) {
      if (errno(error) !== 'EEXIST') throw error;
    }
    const info = lstatSync(path);
    if (!info.isSymbolicLink()) {
      checkOwn(path, info);
      return;
    }
    unlinkSync(path);
  }
}

/** Append `text` to a file yonder keeps (created 0600 when missing), never through a link. */
export function appendPrivateFile(path: string, text: string): void {
  let fd: number;
  try {
    fd = openSync(path, APPEND, 0o600);
  } catch (error) {
    if (errno(error) === 'ELOOP') refuseLink(path, error);
    throw error;
  }
  try {
    checkOwn(path, fstatSync(fd));
    writeAll(fd, Buffer.from(text, 'utf8'));
  } finally {
    closeSync(fd);
  }
}

/**
 * Remove a file of yonder's after looking at what is there: a regular file of the user's, or a
 * link (the link itself goes, never what it points to). Anything else is left alone.
 * Returns whether something was removed.
 */
export function removePrivateFile(path: string): boolean {
  let info: Stats;
  try {
    info = lstatSync(path);
  } catch {
    return false;
  }
  const me = uid();
  if (!info.isSymbolicLink() && (!info.isFile() || (me !== null && info.uid !== me))) return false;
  try {
    unlinkSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Set room aside for a later write on a full disk: a file of `size` bytes at `path` (its
 * blocks allocated now), for `PrivateWriteOptions.spare`. Best effort: false when there is no
 * room now either. One already there is kept.
 */
export function reserveSpareFile(path: string, size: number): boolean {
  let fd: number;
  try {
    fd = openSync(path, CREATE, 0o600);
  } catch (error) {
    if (errno(error) !== 'EEXIST') return false;
    try {
      checkOwn(path, lstatSync(path));
      return true;
    } catch {
      return false;
    }
  }
  try {
    writeAll(fd, Buffer.alloc(size, 0x20));
    closeSync(fd);
    return true;
  } catch {
    closeSync(fd);
    removePrivateFile(path);
    return false;
  }
}
