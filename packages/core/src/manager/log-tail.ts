/** The end of a job's log kept in the ledger: gathered while the log is read, merged with what was kept before, saved when it changed, and read back when the target cannot be reached. */

import { tailLinesStart } from '../remote/slice-log.js';
import type { LogChunkV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord, LogTail } from '../spec/job.js';
import type { ManagerContext } from './manager-context.js';

/** How much of a log's end the ledger keeps. */
export const LOG_TAIL_BYTES = 64 * 1024;

/** Which part of a log a read asks for: its last lines, its last bytes, or all of it. */
export type LogRange =
  | { readonly kind: 'lines'; readonly count: number }
  | { readonly kind: 'bytes'; readonly count: number }
  | { readonly kind: 'all' };

/** A part of a log by byte offsets, with its bytes. */
export interface LogPiece {
  readonly start: number;
  readonly data: Buffer;
}

/**
 * Keeps the last LOG_TAIL_BYTES of consecutive chunks in one ring of that size, filled in
 * place: gigabytes of log go by without an allocation per chunk.
 */
export class TailKeeper {
  private ring: Buffer | undefined;
  /** Where the next byte goes in the ring. */
  private at = 0;
  private length = 0;
  private first = 0;
  private started = false;

  /** Add the next chunk; one that does not follow the last starts the tail again. */
  add(chunk: LogPiece): void {
    if (!this.started || chunk.start !== this.end) {
      this.first = chunk.start;
      this.length = 0;
      this.at = 0;
      this.started = true;
    }
    if (chunk.data.length === 0) return;
    // A copy of at most the last 64 KiB: a chunk's memory is lent only until it is written.
    this.ring ??= Buffer.allocUnsafe(LOG_TAIL_BYTES);
    const skip = Math.max(0, chunk.data.length - LOG_TAIL_BYTES);
    let data = chunk.data.subarray(skip);
    while (data.length > 0) {
      const copied = data.copy(this.ring, this.at);
      this.at = (this.at + copied) % LOG_TAIL_BYTES;
      data = data.subarray(copied);
    }
    const total = this.length + chunk.data.length;
    const kept = Math.min(total, LOG_TAIL_BYTES);
    this.first += total - kept;
    this.length = kept;
  }

  /** The byte offset just after the kept bytes. */
  get end(): number {
    return this.first + this.length;
  }

  /** What is kept, or undefined before the first chunk. */
  piece(): LogPiece | undefined {
    if (!this.started) return undefined;
    if (!this.ring || this.length === 0) return { start: this.first, data: Buffer.alloc(0) };
    const from = (this.at - this.length + LOG_TAIL_BYTES) % LOG_TAIL_BYTES;
    const data =
      from + this.length <= LOG_TAIL_BYTES
        ? Buffer.from(this.ring.subarray(from, from + this.length))
        : Buffer.concat([this.ring.subarray(from), this.ring.subarray(0, this.at)], this.length);
    return { start: this.first, data };
  }
}

/**
 * The kept tail after reading `piece`, the end of a log (it reaches the log's size then): joined
 * to what was kept when the two meet, so reading ten lines does not forget the 64 KiB before
 * them; otherwise `piece` alone. The last LOG_TAIL_BYTES of the result.
 */
export function mergeLogTail(
  previous: LogTail | null | undefined,
  piece: LogPiece,
  at: string,
): LogTail {
  const end = piece.start + piece.data.length;
  let start = piece.start;
  let data = piece.data;
  if (
    previous &&
    previous.start <= piece.start &&
    piece.start <= previous.end &&
    end >= previous.end
  ) {
    const before = Buffer.from(previous.data, 'base64').subarray(0, piece.start - previous.start);
    data = Buffer.concat([before, piece.data]);
    start = previous.start;
  }
  if (data.length > LOG_TAIL_BYTES) {
    start += data.length - LOG_TAIL_BYTES;
    data = data.subarray(data.length - LOG_TAIL_BYTES);
  }
  return { at, start, end, data: data.toString('base64') };
}

/** Keep `piece` (the end of the job's log as just read) in the ledger, if it adds anything. */
export async function saveLogTail(
  context: ManagerContext,
  job: JobRecord,
  piece: LogPiece,
): Promise<void> {
  // An empty read (the size only) adds nothing, and must not replace what was kept.
  if (piece.data.length === 0) return;
  const at = context.now().toISOString();
  const unchanged = (kept: LogTail | null | undefined): boolean => {
    const next = mergeLogTail(kept, piece, at);
    return kept?.start === next.start && kept.end === next.end;
  };
  if (unchanged(job.logTail)) return;
  await context.store.updateJob(job.id, (current) =>
    unchanged(current.logTail)
      ? undefined
      : { ...current, logTail: mergeLogTail(current.logTail, piece, at) },
  );
}

/** What the kept tail holds of a read, and whether that is all of what was asked. */
export interface KeptRead {
  readonly chunk: LogChunkV1;
  /** False when the read asked for more than was kept (e.g. more lines). */
  readonly complete: boolean;
}

/** The part of the kept tail that `range` asks for, with its offsets in the log. */
export function readLogTail(tail: LogTail, range: LogRange): KeptRead {
  const bytes = Buffer.from(tail.data, 'base64');
  let from = 0;
  let complete = tail.start === 0;
  if (range.kind === 'bytes') {
    from = Math.max(0, bytes.length - range.count);
    complete ||= range.count <= bytes.length;
  } else if (range.kind === 'lines') {
    from = tailLinesStart(bytes, range.count).start;
    // Found by a newline, not at the kept bytes' first (perhaps partial) line: exact.
    complete ||= from > 0 || range.count <= 0;
  }
  return {
    chunk: {
      exists: true,
      data: bytes.subarray(from),
      start: tail.start + from,
      offset: tail.end,
      size: tail.end,
    },
    complete,
  };
}
