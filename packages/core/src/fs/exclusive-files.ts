import { closeSync, constants, lstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { YonderError } from '../errors/yonder-error.js';

const EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Create a file that must not exist yet, never through a symlink, with `mode`; write `data`. */
export function writeExclusive(path: string, data: string | Buffer, mode = 0o600): void {
  const fd = openSync(path, EXCLUSIVE, mode);
  try {
    const buffer = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let written = 0;
    while (written < buffer.length) written += writeSync(fd, buffer, written);
  } finally {
    closeSync(fd);
  }
}

/** Open a new file exclusively for appending output (a job's log); returns the fd. */
export function openExclusive(path: string, mode = 0o600): number {
  return openSync(path, EXCLUSIVE | constants.O_APPEND, mode);
}

/**
 * Make sure `path` is a real directory (not a symlink), creating it and its parents with
 * mode 0700 when missing.
 * @throws YonderError `E_UNSAFE_VALUE` when something else is there.
 */
export function ensurePrivateDirectory(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const info = lstatSync(path);
  if (!info.isDirectory() || info.isSymbolicLink()) {
    throw new YonderError(
      'E_UNSAFE_VALUE',
      `Expected a directory at ${path}, found something else (a symlink or a file).`,
    );
  }
}

/**
 * Create a job's private directory (0700). It must not exist: a directory left by another
 * job with the same id is an error, never reused.
 * @throws YonderError `E_SUBMIT_FAILED` when it exists.
 */
export function createJobDirectory(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new YonderError(
        'E_SUBMIT_FAILED',
        `The job directory ${path} already exists; it is never reused. Check that no job is using it, then remove it.`,
        { cause: error },
      );
    }
    throw error;
  }
}
