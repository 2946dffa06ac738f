/** Copying a range of a log from its backend to a writer in bounded chunks, a couple of reads in flight, each chunk handed over in order and awaited (backpressure), its memory used again after. */
import { recycleLogBuffer } from '../backend/local/log-buffers.js';
import type { LogChunkV1 } from '../spec/backend/v1/backend-v1.js';

/** Reads `maxBytes` at most from `offset`. */
export type ChunkReader = (offset: number, maxBytes: number) => Promise<LogChunkV1>;

/**
 * Takes the next chunk; the next is handed over only once this resolves. `chunk.data` is lent:
 * its memory may be used again once the write has resolved, so copy what you keep.
 */
export type LogWriter = (chunk: LogChunkV1) => void | Promise<void>;

/** How many reads are in flight at once: one being written while the next is read. */
const READ_AHEAD = 2;

/** Where a copy stopped. */
export interface PumpResult {
  /** The byte offset after the last byte handed over. */
  readonly offset: number;
  /** The log's size as the last read saw it (the copy may stop before it). */
  readonly size: number;
  /** False when the log had disappeared. */
  readonly exists: boolean;
  /** True when the log was shorter than a read expected (truncated or replaced). */
  readonly shrank: boolean;
  /** Bytes handed over. */
  readonly bytes: number;
}

/**
 * Copy the log from `from` to `to` (undefined: to the size the first read finds) in chunks of
 * at most `chunkBytes`, reading ahead while a chunk is written, and never holding more than a
 * few chunks. A reader may return fewer bytes than asked (the copy goes on from there). Stops
 * early at an abort (after the chunk in hand), when the log is gone, or when it is shorter
 * than it was (`shrank`).
 */
export async function pumpLog(
  read: ChunkReader,
  write: LogWriter,
  options: { from: number; to?: number; chunkBytes: number; signal?: AbortSignal },
): Promise<PumpResult> {
  const { chunkBytes, signal } = options;
  let offset = options.from;
  let bytes = 0;
  let size = options.to ?? offset;
  // Undefined while following, until the first read says how much there is.
  let limit = options.to;
  let ahead: Array<{ at: number; want: number; chunk: Promise<LogChunkV1> }> = [];
  let next = offset;
  const fill = (): void => {
    while (ahead.length < READ_AHEAD && !signal?.aborted) {
      if (limit === undefined ? ahead.length > 0 : next >= limit) return;
      const want = limit === undefined ? chunkBytes : Math.min(chunkBytes, limit - next);
      const chunk = read(next, want);
      chunk.catch(() => {}); // awaited in order below; an early error must not go unhandled
      ahead.push({ at: next, want, chunk });
      next += want;
    }
  };
  const settle = async (): Promise<void> => {
    // Let reads still in flight end before the caller closes the transport under them.
    const left = await Promise.allSettled(ahead.map((entry) => entry.chunk));
    for (const read of left) if (read.status === 'fulfilled') recycleLogBuffer(read.value.data);
    ahead = [];
  };
  const hand = async (chunk: LogChunkV1): Promise<void> => {
    if (chunk.data.length > 0) await write(chunk);
    offset = chunk.offset;
    bytes += chunk.data.length;
    recycleLogBuffer(chunk.data);
  };
  const result = (exists: boolean, shrank: boolean): PumpResult => ({
    offset,
    size,
    exists,
    shrank,
    bytes,
  });
  try {
    fill();
    while (ahead.length > 0) {
      const { at, want, chunk: pending } = ahead.shift() as (typeof ahead)[number];
      const chunk = await pending;
      if (!chunk.exists) return result(false, false);
      if (chunk.start !== at) {
        size = chunk.size;
        return result(true, true);
      }
      size = Math.max(size, chunk.size);
      limit = Math.max(limit ?? 0, Math.min(chunk.size, options.to ?? chunk.size));
      if (chunk.data.length < want) {
        if (chunk.offset >= chunk.size && chunk.size < at + want && options.to !== undefined) {
          // The log ends before the size it had: truncated or replaced.
          size = chunk.size;
          await hand(chunk);
          return result(true, true);
        }
        // A short read: what was planned after it starts in the wrong place.
        await settle();
        next = chunk.offset;
      }
      fill();
      await hand(chunk);
      if (signal?.aborted) break;
      fill();
    }
    return result(true, false);
  } finally {
    await settle();
  }
}
