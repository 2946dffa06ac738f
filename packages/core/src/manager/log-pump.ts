/** Copying a range of a log from its backend to a writer in bounded pieces: streamed by a backend that can (one read for many megabytes, each piece awaited), else in chunks with a couple of reads in flight; each piece handed over in order and awaited (backpressure), its memory used again after. */
import { recycleLogBuffer } from '../backend/local/log-buffers.js';
import type { LogChunkV1 } from '../spec/backend/v1/backend-v1.js';

/**
 * Reads `maxBytes` at most from `offset`. A backend that streams hands the bytes to `onData`
 * piece by piece (the chunk returned then has no data, its offsets spanning the pieces).
 */
export type ChunkReader = (
  offset: number,
  maxBytes: number,
  onData: (piece: LogChunkV1) => Promise<void>,
) => Promise<LogChunkV1>;

/**
 * Takes the next chunk; the next is handed over only once this resolves. `chunk.data` is lent:
 * its memory may be used again once the write has resolved, so copy what you keep.
 */
export type LogWriter = (chunk: LogChunkV1) => void | Promise<void>;

/** How many reads are in flight at once when the backend does not stream: one being written while the next is read. */
const READ_AHEAD = 2;

/** Thrown by the piece handler to stop a streamed read at an abort: the pump ends there. */
const STOP = new Error('the log copy was stopped');

/** Hand a streamed piece to `write` in chunks of at most `chunkBytes`, whatever the size of the backend's pieces. */
export async function writeInChunks(
  piece: LogChunkV1,
  chunkBytes: number,
  write: (chunk: LogChunkV1) => Promise<void>,
): Promise<void> {
  if (piece.data.length <= chunkBytes) {
    if (piece.data.length > 0) await write(piece);
    return;
  }
  for (let from = 0; from < piece.data.length; from += chunkBytes) {
    const data = piece.data.subarray(from, from + chunkBytes);
    const start = piece.start + from;
    await write({ ...piece, data, start, offset: start + data.length });
  }
}

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
 * Copy the log from `from` to `to` (undefined: to the size the first read finds). A backend
 * that streams is asked for up to `streamBytes` a read (one read, its pieces written as they
 * come); one that does not, for chunks of at most `chunkBytes`, reading ahead while a chunk is
 * written, and never holding more than a few chunks. Which one it is, the first read that
 * returns bytes shows. A reader may return fewer bytes than asked (the copy goes on from there).
 * Stops early at an abort (after the piece in hand), when the log is gone, or when it is
 * shorter than it was (`shrank`).
 */
export async function pumpLog(
  read: ChunkReader,
  write: LogWriter,
  options: {
    from: number;
    to?: number;
    chunkBytes: number;
    streamBytes?: number;
    signal?: AbortSignal;
  },
): Promise<PumpResult> {
  const { chunkBytes, signal } = options;
  const streamBytes = Math.max(chunkBytes, options.streamBytes ?? chunkBytes);
  let offset = options.from;
  let bytes = 0;
  let size = options.to ?? offset;
  // Undefined while following, until the first read says how much there is.
  let limit = options.to;
  // Unknown until a read returns bytes: then whether they came as pieces.
  let streams: boolean | undefined;
  let ahead: Array<{ at: number; want: number; chunk: Promise<LogChunkV1> }> = [];
  let next = offset;
  const onData = async (piece: LogChunkV1): Promise<void> => {
    await writeInChunks(piece, chunkBytes, async (chunk) => {
      await write(chunk);
      offset = chunk.offset;
      bytes += chunk.data.length;
    });
    size = Math.max(size, piece.size);
    if (signal?.aborted) throw STOP;
  };
  const fill = (): void => {
    // Until the backend is known not to stream, one read at a time: a streamed read covers it all.
    while (ahead.length < (streams === false ? READ_AHEAD : 1) && !signal?.aborted) {
      if (limit === undefined ? ahead.length > 0 : next >= limit) return;
      const most = streams ? streamBytes : chunkBytes;
      const want = limit === undefined ? most : Math.min(most, limit - next);
      const chunk = read(next, want, onData);
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
      let chunk: LogChunkV1;
      try {
        chunk = await pending;
      } catch (error) {
        if (error === STOP) break;
        throw error;
      }
      if (!chunk.exists) return result(false, false);
      if (chunk.start !== at) {
        size = chunk.size;
        return result(true, true);
      }
      if (chunk.data.length > 0) streams = false;
      else if (chunk.offset > at) streams = true;
      size = Math.max(size, chunk.size);
      limit = Math.max(limit ?? 0, Math.min(chunk.size, options.to ?? chunk.size));
      if (chunk.offset - at < want) {
        if (chunk.offset >= chunk.size && chunk.size < at + want && options.to !== undefined) {
          // The log ends before the size it had: truncated or replaced.
          size = chunk.size;
          await hand(chunk);
          return result(true, true);
        }
        // A short read: what was planned after it starts in the wrong place.
        await settle();
        next = chunk.offset;
      } else if (streams && ahead.length === 0) next = chunk.offset;
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
