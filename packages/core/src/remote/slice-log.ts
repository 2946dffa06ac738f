/** The part of a log held in memory that a read asks for (a tail of lines or bytes, or what follows an offset), with the same byte semantics as the script that reads log files. */
import type { LogChunkV1, ReadLogOptionsV1 } from '../spec/backend/v1/backend-v1.js';
import { DEFAULT_LOG_READ_BYTES } from './read-remote-log.js';

const NEWLINE = 0x0a;

/**
 * Where the last `count` lines of `bytes` begin, as `tail -n count` counts them: a line ends
 * with "\n", a last line without one counts. `found` is how many lines there were, up to
 * `count` (fewer: they all are, and `start` is 0).
 */
export function tailLinesStart(bytes: Uint8Array, count: number): { start: number; found: number } {
  if (count <= 0 || bytes.length === 0) return { start: bytes.length, found: 0 };
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === NEWLINE) end -= 1;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let found = 0;
  while (found < count) {
    // Search [0, end): lastIndexOf reads a negative offset from the end, so stop at 0 first.
    const newline = end > 0 ? buffer.lastIndexOf(NEWLINE, end - 1) : -1;
    // No newline before: what is left, [0, end), is one more line (ended by the newline at end).
    if (newline < 0) return { start: 0, found: found + 1 };
    found += 1;
    end = newline;
  }
  return { start: end + 1, found };
}

/**
 * The chunk `options` asks for of a log whose bytes are all in `bytes` (a logs command's
 * output, a kept tail): from `options.offset`, else the last `tailLines` lines, else the last
 * `tailBytes` bytes, else the start; at most `maxBytes` (default 1 MiB) of it.
 */
export function sliceLog(bytes: Buffer, options: ReadLogOptionsV1): LogChunkV1 {
  const size = bytes.length;
  let start = 0;
  if (options.offset !== undefined) start = Math.min(Math.max(0, options.offset), size);
  else if (options.tailLines !== undefined) start = tailLinesStart(bytes, options.tailLines).start;
  else if (options.tailBytes !== undefined) start = Math.max(0, size - options.tailBytes);
  const end = Math.min(size, start + Math.max(0, options.maxBytes ?? DEFAULT_LOG_READ_BYTES));
  return { exists: true, data: bytes.subarray(start, end), start, offset: end, size };
}
