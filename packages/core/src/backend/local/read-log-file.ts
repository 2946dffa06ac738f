/** Reading a log file on this machine from a byte offset, as raw bytes: the local half of the shared log reader. */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { YonderError } from '../../errors/yonder-error.js';
import type { LogChunkV1 } from '../../spec/backend/v1/backend-v1.js';
import { takeLogBuffer } from './log-buffers.js';

const DEFAULT_MAX_BYTES = 1024 * 1024;

/**
 * At most `maxBytes` bytes of a log file on this machine from `offset` (past the end: none, at
 * the end), with the file's size; the bytes as they are, never decoded. A log that does not
 * exist (or is not a regular file) yet is not an error: `exists` is false.
 * @throws YonderError `E_LOG_UNAVAILABLE` when the file cannot be read.
 */
export async function readLogFile(
  path: string,
  options: { readonly offset?: number; readonly maxBytes?: number },
): Promise<LogChunkV1> {
  // Synchronous calls: a read from the page cache takes less time than a trip through the
  // thread pool, and the caller reads ahead anyway.
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return missingLog(path);
    throw unreadable(path, error);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return missingLog(path);
    const size = stat.size;
    const start = Math.min(Math.max(0, Math.floor(options.offset ?? 0)), size);
    const wanted = Math.min(size - start, Math.max(0, options.maxBytes ?? DEFAULT_MAX_BYTES));
    const data = takeLogBuffer(wanted);
    let filled = 0;
    while (filled < wanted) {
      const read = readSync(fd, data, filled, wanted - filled, start + filled);
      if (read === 0) break; // the file shrank meanwhile: return what is there
      filled += read;
    }
    return {
      exists: true,
      data: filled === wanted ? data : data.subarray(0, filled),
      start,
      offset: start + filled,
      size,
    };
  } catch (error) {
    throw unreadable(path, error);
  } finally {
    closeSync(fd);
  }
}

/** The chunk of a log that does not exist: `message` says which path is missing. */
export function missingLog(path: string): LogChunkV1 {
  return {
    exists: false,
    data: Buffer.alloc(0),
    start: 0,
    offset: 0,
    size: 0,
    message: `${path} does not exist`,
  };
}

function unreadable(path: string, error: unknown): YonderError {
  return new YonderError(
    'E_LOG_UNAVAILABLE',
    `Could not read ${path}: ${(error as Error).message}`,
    { cause: error },
  );
}
