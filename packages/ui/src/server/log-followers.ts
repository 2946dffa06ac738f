/** Job logs for the page: one follow through the manager per job being watched, shared by every page showing it, kept as a bounded buffer addressed by byte offset. */
import { type JobManager, toYonderError } from '@yonder/core';

/** What a page following a log is sent. */
export type LogMessage =
  /** Text of the log; `offset` is the byte offset just after it (resume from there). */
  | { readonly type: 'log'; readonly text: string; readonly offset: number }
  /**
   * The bytes before `offset` are not sent (no longer held, or before the end the page asked
   * for): the text goes on from there, at the start of a line when one begins in what is held.
   */
  | { readonly type: 'truncated'; readonly offset: number }
  | { readonly type: 'notice'; readonly text: string }
  /** The job has ended and everything it wrote from the offsets sent on has been sent; `size` is the log's size. */
  | { readonly type: 'end'; readonly size: number };

export interface LogFollowersOptions {
  /** Bytes of each log held for pages that join later or reconnect. Default 2 MiB. */
  readonly bufferBytes?: number;
  /** How long a follow goes on after its last page left. Default 15 s. */
  readonly lingerMs?: number;
}

/**
 * How many bytes at the end of `bytes` begin a UTF-8 character that is not complete yet (0 to 3):
 * text is sent in whole characters, the rest waits for the bytes that complete it.
 */
function incompleteTail(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back += 1) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

class LogFollower {
  private chunks: Array<{ start: number; bytes: Buffer }> = [];
  /** The offset of the first byte held. */
  base = 0;
  /** The offset just after the last byte held. */
  end = 0;
  /** Whether the first text has arrived: offsets are known only from then on. */
  started = false;
  done = false;
  notices: string[] = [];
  subscribers = 0;
  private readonly stop = new AbortController();
  private wake: Array<() => void> = [];
  private linger: NodeJS.Timeout | null = null;

  constructor(
    manager: JobManager,
    id: string,
    private readonly bufferBytes: number,
  ) {
    manager
      .follow(id, (chunk) => this.append(chunk.start, chunk.data), {
        // The page holds the last `bufferBytes` of the log: the first read asks for as much.
        bytes: bufferBytes,
        signal: this.stop.signal,
        onNotice: (text) => this.notice(text),
      })
      .catch((error: unknown) => this.notice(toYonderError(error).message))
      .finally(() => {
        this.done = true;
        this.changed();
      });
  }

  private changed(): void {
    for (const resolve of this.wake.splice(0)) resolve();
  }

  private notice(text: string): void {
    this.notices.push(text);
    this.changed();
  }

  private append(start: number, data: Buffer): void {
    // The log's own byte offsets; the bytes copied (a chunk is lent only until it is taken).
    const bytes = Buffer.from(data);
    if (!this.started) this.base = start;
    this.started = true;
    this.chunks.push({ start, bytes });
    this.end = start + bytes.length;
    while (this.end - this.base > this.bufferBytes && this.chunks.length > 1) {
      const dropped = this.chunks.shift() as { start: number; bytes: Buffer };
      this.base = dropped.start + dropped.bytes.length;
    }
    this.changed();
  }

  /**
   * The text held from `offset` on (offset at least `base`) in whole characters, and the offset
   * after it: a character the job has not finished writing waits for the next read.
   */
  read(offset: number): { text: string; end: number } {
    const parts: Buffer[] = [];
    for (const chunk of this.chunks) {
      const chunkEnd = chunk.start + chunk.bytes.length;
      if (chunkEnd <= offset) continue;
      parts.push(chunk.start >= offset ? chunk.bytes : chunk.bytes.subarray(offset - chunk.start));
    }
    const bytes = Buffer.concat(parts);
    const whole = this.done ? bytes.length : bytes.length - incompleteTail(bytes);
    return { text: bytes.subarray(0, whole).toString('utf8'), end: offset + whole };
  }

  /**
   * Where the first whole line held at or after `offset` begins: just after the first newline
   * from `offset - 1` on, or `offset` itself when it starts a line or no newline is held.
   */
  lineStart(offset: number): number {
    for (const chunk of this.chunks) {
      const chunkEnd = chunk.start + chunk.bytes.length;
      if (chunkEnd < offset) continue;
      const from = Math.max(0, offset - 1 - chunk.start);
      const newline = chunk.bytes.indexOf(0x0a, from);
      if (newline >= 0) return Math.max(offset, chunk.start + newline + 1);
    }
    return offset;
  }

  /** Resolves at the next change, or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      this.wake.push(resolve);
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  hold(): void {
    this.subscribers += 1;
    if (this.linger) clearTimeout(this.linger);
    this.linger = null;
  }

  release(lingerMs: number, forget: () => void): void {
    this.subscribers -= 1;
    if (this.subscribers > 0) return;
    this.linger = setTimeout(() => {
      this.stop.abort();
      forget();
    }, lingerMs);
    this.linger.unref();
  }

  close(): void {
    if (this.linger) clearTimeout(this.linger);
    this.stop.abort();
    this.changed();
  }
}

/** Every log being followed, by job id. */
export class LogFollowers {
  private readonly followers = new Map<string, LogFollower>();

  constructor(
    private readonly manager: JobManager,
    private readonly options: LogFollowersOptions = {},
  ) {}

  /**
   * The log of job `id` from byte `from` on, as messages, until the job has ended and all of
   * it was sent or `signal` aborts. The job is followed through the manager once, however
   * many pages show it.
   */
  async *follow(id: string, from: number, signal: AbortSignal): AsyncGenerator<LogMessage> {
    let follower = this.followers.get(id);
    if (!follower) {
      follower = new LogFollower(this.manager, id, this.options.bufferBytes ?? 2 * 1024 * 1024);
      this.followers.set(id, follower);
    }
    const current = follower;
    current.hold();
    let cursor = Math.max(0, from);
    let noticed = 0;
    try {
      while (!signal.aborted) {
        while (noticed < current.notices.length) {
          yield { type: 'notice', text: current.notices[noticed] as string };
          noticed += 1;
        }
        if (current.started) {
          // A page resuming past the end (the log was replaced) goes on from the end.
          if (cursor > current.end) cursor = current.end;
          if (cursor < current.base) {
            // Not from the middle of a line: from the first one that begins in what is held.
            cursor = current.lineStart(current.base);
            yield { type: 'truncated', offset: cursor };
          }
          if (cursor < current.end) {
            const { text, end } = current.read(cursor);
            if (end > cursor) {
              cursor = end;
              yield { type: 'log', text, offset: end };
              continue;
            }
          }
        }
        if (current.done) {
          yield { type: 'end', size: current.end };
          return;
        }
        await current.next(signal);
      }
    } finally {
      current.release(this.options.lingerMs ?? 15_000, () => {
        if (this.followers.get(id) === current) this.followers.delete(id);
      });
    }
  }

  close(): void {
    for (const follower of this.followers.values()) follower.close();
    this.followers.clear();
  }
}
