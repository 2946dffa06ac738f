import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { getErrorMessage } from '../../errors/get-error-message.js';
import { YonderError } from '../../errors/yonder-error.js';
import type { LogChunkV1, ReadLogOptionsV1 } from '../../spec/backend/v1/backend-v1.js';

const DEFAULT_MAX_BYTES = 1024 * 1024;

/**
 * Read a log file on this machine: its last `tailLines` lines, or what follows `offset`.
 * A file that does not exist yet is not an error: `exists` is false, with a message.
 */
export function readLogFile(path: string, options: ReadLogOptionsV1): LogChunkV1 {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return {
        exists: false,
        text: '',
        offset: 0,
        message: 'The job has not written any output yet (its log does not exist).',
      };
    }
    throw new YonderError(
      'E_LOG_UNAVAILABLE',
      `Could not read ${path}: ${getErrorMessage(error)}`,
      { cause: error },
    );
  }
  try {
    const size = fstatSync(fd).size;
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    if (options.offset !== undefined) {
      const start = Math.min(options.offset, size);
      const length = Math.min(size - start, maxBytes);
      const buffer = Buffer.alloc(length);
      const read = length > 0 ? readSync(fd, buffer, 0, length, start) : 0;
      return {
        exists: true,
        text: buffer.subarray(0, read).toString('utf8'),
        offset: start + read,
      };
    }
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    const read = length > 0 ? readSync(fd, buffer, 0, length, size - length) : 0;
    let text = buffer.subarray(0, read).toString('utf8');
    if (options.tailLines !== undefined) text = tailLines(text, options.tailLines);
    return { exists: true, text, offset: size };
  } finally {
    closeSync(fd);
  }
}

/** The last `count` lines of `text` (a final newline does not start another line). */
export function tailLines(text: string, count: number): string {
  if (count <= 0) return '';
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  const lines = body.split('\n');
  const kept = lines.slice(-count).join('\n');
  return text.endsWith('\n') ? `${kept}\n` : kept;
}
