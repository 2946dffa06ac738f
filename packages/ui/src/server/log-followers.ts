/** Job logs for the page: one follow through the manager per job being watched, shared by every page showing it, kept as a bounded buffer addressed by byte offset. */
import { type JobManager, toYonderError } from '@yonder/core';

/** What a page following a log is sent. */
export type LogMessage =
  /** Text of the log; `offset` is the byte offset just after it (resume from there). */
  | { readonly type: 'log'; readonly text: string; readonly offset: number }
  /** The bytes before `offset` are no longer held; the text goes on from there. */
  | { readonly type: 'truncated'; readonly offset: number }
  | { readonly type: 'notice'; readonly text: string }
  /** The job has ended and everything it wrote has been sent. */
  | { readonly type: 'end' };

export interface LogFollowersOptions {
  /** Bytes of each log held for pages that join later or reconnect. Default 2 MiB. */
  readonly bufferBytes?: number;
  /** How long a follow goes on after its last page left. Default 15 s. */
  readonly lingerMs?: number;
}

/** The largest tail the first read asks for; the backend bounds it by bytes (1 MiB) too. */
const FIRST_READ_LINES = 1_000_000;

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
      .follow(id, (text) => this.append(text), {
        lines: FIRST_READ_LINES,
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

  private append(text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    this.started = true;
    this.chunks.push({ start: this.end, bytes });
    this.end += bytes.length;
    while (this.end - this.base > this.bufferBytes && this.chunks.length > 1) {
      const dropped = this.chunks.shift() as { start: number; bytes: Buffer };
      this.base = dropped.start + dropped.bytes.length;
    }
    this.changed();
  }

  /** The text held from `offset` on (offset at least `base`). */
  read(offset: number): string {
    const parts: Buffer[] = [];
    for (const chunk of this.chunks) {
      const chunkEnd = chunk.start + chunk.bytes.length;
      if (chunkEnd <= offset) continue;
      parts.push(chunk.start >= offset ? chunk.bytes : chunk.bytes.subarray(offset - chunk.start));
    }
    return Buffer.concat(parts).toString('utf8');
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
            cursor = current.base;
            yield { type: 'truncated', offset: cursor };
          }
          if (cursor < current.end) {
            const end = current.end;
            const text = current.read(cursor);
            cursor = end;
            yield { type: 'log', text, offset: end };
            continue;
          }
        }
        if (current.done) {
          yield { type: 'end' };
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
