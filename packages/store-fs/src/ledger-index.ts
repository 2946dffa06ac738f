/** The ledger's index.log: one line per created job, appended, read from its end for recent jobs. */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { UntrustedPathError, YonderError } from '@yonder/core';
import { appendPrivateFile } from '@yonder/core/backend-kit';
import { JOB_ID } from './records.js';

const INDEX_CHUNK = 64 * 1024;

/** Append a job's line; a leading newline isolates any line a crash left unfinished. */
export function appendIndex(path: string, createdAt: string, id: string): void {
  appendPrivateFile(path, `\n${createdAt}\t${id}\n`);
}

/**
 * Open a file of the ledger's own for reading, without following a link: undefined when it
 * does not exist.
 * @throws UntrustedPathError when it is a link, not a regular file, another user's, or
 * writable by others (naming the fix).
 */
export function openLedgerFile(path: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      throw new YonderError(
        'E_UNTRUSTED_PATH',
        `Refusing ${path}: it is a symbolic link, and yonder never follows a link it did not make. Fix: remove it (rm ${path}).`,
      );
    }
    throw error;
  }
  try {
    checkLedgerFile(path, fstatSync(fd));
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

/** A file of the ledger's own: a regular file of the user's that only they can write. */
export function checkLedgerFile(path: string, info: Stats): void {
  const uid = process.getuid?.();
  if (!info.isFile() || (uid !== undefined && info.uid !== uid) || (info.mode & 0o022) !== 0) {
    throw new UntrustedPathError({
      subject: path,
      path,
      owner: info.uid,
      mode: info.mode & 0o7777,
      message: `Refusing ${path}: it is not a file of yours that only you can write. Fix: move it aside (mv ${path} ${path}.untrusted).`,
    });
  }
}

/**
 * The ids of the `limit` most recently created jobs, newest first, read from the end of the
 * index without following a link and without reading the whole file.
 */
export function recentIds(path: string, limit: number): string[] {
  const fd = openLedgerFile(path);
  if (fd === undefined) return [];
  const ids: string[] = [];
  const seen = new Set<string>();
  try {
    const info = fstatSync(fd);
    let end = info.size;
    let carry = '';
    while (end > 0 && ids.length < limit) {
      const start = Math.max(0, end - INDEX_CHUNK);
      const buffer = Buffer.alloc(end - start);
      readSync(fd, buffer, 0, buffer.length, start);
      const lines = (buffer.toString('utf8') + carry).split('\n');
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
  return ids;
}
