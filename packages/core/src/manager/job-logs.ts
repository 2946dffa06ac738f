/** Reading a job's output through its backend, byte for byte and in bounded memory: its last lines or bytes or all of it, or followed until the job ends; saying why when there is no log, and showing the kept tail when the target cannot be reached. */
import { toYonderError, YonderError } from '../errors/yonder-error.js';
import { tailLinesStart } from '../remote/slice-log.js';
import type { LogChunkV1, ReadLogOptionsV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import { isTerminal } from '../state/job-states.js';
import { type LogWriter, pumpLog, writeInChunks } from './log-pump.js';
import { LOG_TAIL_BYTES, type LogRange, readLogTail, saveLogTail, TailKeeper } from './log-tail.js';
import { backendJob, type ManagerContext } from './manager-context.js';
import { refreshJobs } from './refresh-jobs.js';
import { waitLoop } from './wait-loop.js';

export type { LogWriter } from './log-pump.js';
export type { LogRange } from './log-tail.js';

/** Bytes per read from a backend that does not stream: memory stays within a few of these, whatever the log's size. */
export const DEFAULT_LOG_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Bytes per read from a backend that streams (its pieces are written as they come, so memory
 * does not grow with this): one remote command for this much of the log, not one a chunk.
 */
export const LOG_STREAM_BYTES = 256 * 1024 * 1024;

/** `yonder logs` without a range: the last 10 lines, as `tail`. */
export const DEFAULT_LOG_LINES = 10;

export interface LogOptions {
  /** The last N lines (the default: 10, when neither `bytes` nor `all` is given). */
  lines?: number;
  /** The last N bytes. */
  bytes?: number;
  /** The whole log. */
  all?: boolean;
  /** Bytes per read (default 4 MiB): what bounds the memory used. */
  chunkBytes?: number;
  /** Stop reading (after the chunk in hand). */
  signal?: AbortSignal;
  /** Messages for people, each once: the log does not exist yet, the target is unreachable… */
  onNotice?: (text: string) => void;
}

/** How reading a job's log went. */
export interface LogResult {
  /** The job as last seen. */
  job: JobRecord;
  /** Whether the log exists; when false, `message` says why there is none. */
  exists: boolean;
  /** The byte offsets in the log of what was written: from `start` to `end`. */
  start: number;
  end: number;
  /** The log's size as last read. */
  size: number;
  /** Why there is no log: not started yet, nothing written yet, or gone. */
  message?: string;
  /** The job ran and its log is gone (a failure, where the rest is not). */
  gone?: boolean;
  /**
   * The target could not be reached and the tail kept in the ledger was written instead:
   * when it was read, why the target could not be reached now, and whether it holds all that
   * was asked for.
   */
  kept?: { at: string; reason: string; complete: boolean };
  /** `follow` only: it stopped on the signal before the job ended. */
  aborted?: boolean;
}

/** An error's message inside a sentence of ours: without its own final full stop. */
function sentence(message: string): string {
  return message.replace(/\.+$/, '');
}

/**
 * Which range the options ask for. A count no log can reach (past 2^53, where a number is no
 * longer exact and beyond what a target's shell counts to; `tail -n 99999999999999999999`,
 * meaning all of it) is all of it.
 */
export function logRange(options: LogOptions): LogRange {
  if (options.all) return { kind: 'all' };
  const count = options.bytes ?? options.lines ?? DEFAULT_LOG_LINES;
  if (!(count <= Number.MAX_SAFE_INTEGER)) return { kind: 'all' };
  return { kind: options.bytes !== undefined ? 'bytes' : 'lines', count: Math.max(0, count) };
}

/**
 * One read of a job's log through its backend.
 * @throws YonderError `E_LOG_UNAVAILABLE` when the backend cannot read output; what it throws.
 */
export async function readJobLog(
  context: ManagerContext,
  job: JobRecord,
  options: ReadLogOptionsV1,
): Promise<LogChunkV1> {
  const backend = await context.resolveBackend(job.backend, job.profileSnapshot);
  if (!backend.capabilities.logs) {
    throw new YonderError('E_LOG_UNAVAILABLE', `The ${backend.id} backend cannot read job output.`);
  }
  if (job.externalId === null) {
    return { exists: false, data: Buffer.alloc(0), start: 0, offset: 0, size: 0 };
  }
  return backend.readLog(
    backendJob(job, backend),
    options,
    await context.backendContext(job.profileSnapshot, backend),
  );
}

/** The target could not be reached (as opposed to: the log could not be read there). */
function unreachable(error: unknown): boolean {
  return (
    YonderError.isInstance(error) &&
    (error.code === 'E_TRANSPORT' ||
      error.code === 'E_TIMEOUT' ||
      error.code === 'E_LOGIN_REQUIRED')
  );
}

/** Why a job has no log, for people; `gone` when it ran and its log has disappeared. */
export function missingLogMessage(
  job: JobRecord,
  detail: string | undefined,
): { message: string; gone: boolean } {
  const where = detail ? ` (${detail})` : '';
  if (job.externalId === null || job.state === 'submitting' || job.state === 'pending')
    return {
      message: `job ${job.id} has not started yet (${job.state}): its log appears when it starts.`,
      gone: false,
    };
  if (!isTerminal(job.state))
    return { message: `job ${job.id} has not written any output yet${where}.`, gone: false };
  const ran =
    job.exitCode !== null ||
    job.signal !== null ||
    job.state === 'succeeded' ||
    job.history.some((step) => step.to === 'running');
  return ran
    ? { message: `job ${job.id} ran, but its log is gone${where}.`, gone: true }
    : {
        message: `job ${job.id} ended (${job.state}) before it started: it has no log.`,
        gone: false,
      };
}

/** Where a range begins when it is not read from the last 64 KiB: the backend finds it. */
function rangeOptions(range: LogRange): ReadLogOptionsV1 {
  if (range.kind === 'all') return { offset: 0 };
  if (range.kind === 'bytes') return { tailBytes: range.count };
  return { tailLines: range.count };
}

/** One reading of a log: the job, how far it was read, and the tail to keep. */
class LogSession {
  readonly keeper = new TailKeeper();
  offset = 0;
  size = 0;
  begun = false;
  /** Bytes handed to the writer: once there are some, nothing is written twice. */
  written = 0;
  /** Where the first byte written lies in the log, and the offset after the last. */
  firstStart: number | undefined;
  private handedTo = 0;
  private readonly chunkBytes: number;
  private readonly noticed = new Set<string>();

  constructor(
    private readonly context: ManagerContext,
    public job: JobRecord,
    private readonly write: LogWriter,
    private readonly options: LogOptions,
  ) {
    this.chunkBytes = Math.max(1, Math.floor(options.chunkBytes ?? DEFAULT_LOG_CHUNK_BYTES));
  }

  /** Tell `onNotice`, once per text. */
  notice(text: string): void {
    if (this.noticed.has(text)) return;
    this.noticed.add(text);
    this.options.onNotice?.(text);
  }

  private readonly read = (
    offset: number,
    maxBytes: number,
    onData: (piece: LogChunkV1) => Promise<void>,
  ): Promise<LogChunkV1> => readJobLog(this.context, this.job, { offset, maxBytes, onData });

  /** Keep and write a chunk of the log. */
  private readonly hand = async (chunk: LogChunkV1, from = 0): Promise<void> => {
    // A streamed read's answer spans the pieces already handed over and holds none of them.
    if (chunk.data.length === 0 && chunk.offset > chunk.start) return;
    this.keeper.add(chunk);
    const data = from > 0 ? chunk.data.subarray(from) : chunk.data;
    if (data.length === 0) return;
    this.written += data.length;
    this.firstStart ??= chunk.start + from;
    await this.write(from > 0 ? { ...chunk, data, start: chunk.start + from } : chunk);
    this.handedTo = chunk.offset;
    // Where the next read starts, kept as each piece is written: a read that fails after some
    // pieces went out goes on from here, never writing a byte twice.
    if (this.begun) this.offset = chunk.offset;
  };

  private pump(to?: number): ReturnType<typeof pumpLog> {
    return pumpLog(this.read, this.hand, {
      from: this.offset,
      ...(to === undefined ? {} : { to }),
      chunkBytes: this.chunkBytes,
      streamBytes: Math.max(this.chunkBytes, LOG_STREAM_BYTES),
      ...(this.options.signal ? { signal: this.options.signal } : {}),
    });
  }

  /**
   * The last 64 KiB, read first when the range may lie within them: one round trip most of the
   * time, and the tail to keep. `from` is where the range starts in them, when it does.
   */
  private async probe(range: LogRange): Promise<{ chunk: LogChunkV1; from?: number } | undefined> {
    // Nothing asked for (the size only), or more than the last 64 KiB: one read from the backend.
    if (
      range.kind === 'all' ||
      range.count === 0 ||
      (range.kind === 'bytes' && range.count > LOG_TAIL_BYTES)
    )
      return undefined;
    const chunk = await readJobLog(this.context, this.job, {
      tailBytes: LOG_TAIL_BYTES,
      maxBytes: LOG_TAIL_BYTES,
    });
    if (!chunk.exists || range.kind === 'bytes')
      return {
        chunk,
        from: Math.max(0, chunk.data.length - (range.kind === 'bytes' ? range.count : 0)),
      };
    const from = tailLinesStart(chunk.data, range.count).start;
    // Found at a newline, or the whole log is here: exact. Else the lines begin further back.
    return from > 0 || chunk.start === 0 || range.count === 0 ? { chunk, from } : { chunk };
  }

  /** Write `range` of the log as it is now. */
  async begin(range: LogRange): Promise<LogResult> {
    const probe = await this.probe(range);
    let chunk: LogChunkV1;
    let start: number;
    if (probe?.from !== undefined) {
      chunk = probe.chunk;
      if (!chunk.exists) return this.missing(chunk);
      start = chunk.start + probe.from;
      await this.hand(chunk, probe.from);
    } else {
      chunk = await readJobLog(this.context, this.job, {
        ...rangeOptions(range),
        maxBytes: this.chunkBytes,
        onData: (piece) => writeInChunks(piece, this.chunkBytes, this.hand),
      });
      if (!chunk.exists) return this.missing(chunk);
      start = chunk.start;
      await this.hand(chunk);
    }
    this.begun = true;
    this.offset = chunk.offset;
    this.size = chunk.size;
    const pumped = await this.pump(chunk.size);
    this.offset = pumped.offset;
    this.size = pumped.size;
    return { job: this.job, exists: true, start, end: this.offset, size: this.size };
  }

  /**
   * After a read that failed midway: whether any of it was written; then the session goes on
   * from the last byte written, as if the read had ended there.
   */
  resume(): boolean {
    if (this.written === 0) return false;
    if (!this.begun) {
      this.begun = true;
      this.offset = this.handedTo;
      this.size = Math.max(this.size, this.handedTo);
    }
    return true;
  }

  /** Write what the job added since; whether there was anything. */
  async catchUp(): Promise<boolean> {
    const from = this.offset;
    const pumped = await this.pump();
    if (pumped.shrank && pumped.size < from) {
      this.notice(`the log of job ${this.job.id} shrank (truncated?): reading it from its start.`);
      this.offset = 0;
      return true;
    }
    this.offset = pumped.offset;
    this.size = pumped.size;
    return pumped.bytes > 0;
  }

  /** Keep the end of what was read in the ledger, when it reaches the log's end. */
  async save(): Promise<void> {
    const piece = this.keeper.piece();
    if (!piece || piece.start + piece.data.length !== this.size || this.size !== this.offset)
      return;
    try {
      await saveLogTail(this.context, this.job, piece);
    } catch {
      // Keeping a copy is a convenience: a ledger that cannot take it fails nothing.
    }
  }

  /** There is no log: say why, by the job's state as last seen. */
  missing(chunk: LogChunkV1): LogResult {
    const { message, gone } = missingLogMessage(this.job, chunk.message);
    return { job: this.job, exists: false, start: 0, end: 0, size: 0, message, gone };
  }

  async refresh(): Promise<void> {
    await refreshJobs(this.context, { ids: [this.job.id] });
    this.job = (await this.context.store.getJob(this.job.id)) ?? this.job;
  }

  /**
   * The target cannot be reached: write the tail kept in the ledger instead, and go on from its
   * end. Rethrows when nothing was kept, or when part of the log was written already.
   */
  async kept(range: LogRange, error: unknown): Promise<LogResult> {
    const tail = this.job.logTail;
    if (!unreachable(error) || this.written > 0) throw error;
    const reason = toYonderError(error).message;
    if (!tail) {
      throw new YonderError(
        toYonderError(error).code,
        `Cannot reach the target of job ${this.job.id} to read its log, and no copy of its end is kept yet: ${reason}`,
        { cause: error },
      );
    }
    const { chunk, complete } = readLogTail(tail, range);
    if (chunk.data.length > 0) await this.write(chunk);
    this.written += chunk.data.length;
    this.keeper.add({ start: tail.start, data: Buffer.from(tail.data, 'base64') });
    this.offset = tail.end;
    this.size = tail.end;
    this.begun = true;
    return {
      job: this.job,
      exists: true,
      start: chunk.start,
      end: chunk.offset,
      size: chunk.size,
      kept: { at: tail.at, reason, complete },
    };
  }
}

/**
 * Write the part of a job's log that `options` asks for (default: its last 10 lines) to
 * `write`, chunk by chunk, each awaited before the next: exactly the bytes of the log, in
 * memory bounded by a few chunks whatever its size. When the target cannot be reached, the
 * tail kept in the ledger is written instead (`kept` says so); the end of what was read is kept
 * for next time.
 * @throws YonderError `E_LOG_UNAVAILABLE` when the log cannot be read; `E_TRANSPORT` or
 *   `E_TIMEOUT` when the target cannot be reached and no tail was kept.
 */
export async function streamJobLog(
  context: ManagerContext,
  job: JobRecord,
  write: LogWriter,
  options: LogOptions = {},
): Promise<LogResult> {
  const session = new LogSession(context, job, write, options);
  const range = logRange(options);
  let result: LogResult;
  try {
    result = await session.begin(range);
  } catch (error) {
    return session.kept(range, error);
  }
  await session.save();
  return { ...result, job: session.job };
}

/**
 * Write the part of the log `options` asks for, then what the job writes next, until the job
 * is terminal and everything it wrote is written, or the signal aborts (`aborted`). A log that
 * does not exist yet is waited for (`onNotice` says why, once); a target that cannot be reached
 * for a while is retried; a job that ran and whose log is gone ends it (`gone`).
 * @throws YonderError as `streamJobLog`, at the start only.
 */
export async function followJobLog(
  context: ManagerContext,
  initial: JobRecord,
  write: LogWriter,
  options: LogOptions = {},
): Promise<LogResult> {
  const session = new LogSession(context, initial, write, options);
  const range = logRange(options);
  let outcome: LogResult;
  // The range still to read, when the target could not be reached for it at the start.
  let pending: LogRange | null = null;
  try {
    outcome = await session.begin(range);
  } catch (error) {
    const { job } = session;
    const reason = sentence(toYonderError(error).message);
    if (unreachable(error) && session.resume()) {
      // Part of it was written before the connection dropped: go on from its last byte.
      session.notice(`cannot reach the target of job ${job.id}: ${reason}; retrying.`);
      outcome = {
        job,
        exists: true,
        start: session.firstStart ?? 0,
        end: session.offset,
        size: session.size,
      };
    } else if (unreachable(error) && !job.logTail) {
      // Nothing read, nothing kept to show: wait for the target, as `wait` does.
      session.notice(
        `cannot reach the target of job ${job.id}: ${reason}; no copy of its log's end is kept yet. Retrying.`,
      );
      pending = range;
      outcome = { job, exists: true, start: 0, end: 0, size: 0 };
    } else {
      outcome = await session.kept(range, error);
      // Kept after the job ended, the tail is its last word: there is nothing to wait for.
      if (isTerminal(job.state) && job.finishedAt && (outcome.kept?.at ?? '') >= job.finishedAt) {
        session.notice(
          `cannot reach the target of job ${job.id} (${outcome.kept?.reason}); this is its log as read at ${outcome.kept?.at}, after it ended.`,
        );
        return outcome;
      }
      session.notice(
        `cannot reach the target of job ${job.id} (${outcome.kept?.reason}); this is its log as read at ${outcome.kept?.at}. Retrying.`,
      );
    }
  }
  if (!outcome.exists) {
    if (outcome.gone) return outcome;
    session.notice(outcome.message as string);
  }
  const loop = await waitLoop(
    async () => {
      const wasTerminal = isTerminal(session.job.state);
      if (!wasTerminal) await session.refresh();
      try {
        if (!session.begun) {
          // The range the target could not be reached for; else the log appeared after
          // following began, and all of it is new.
          const begun = await session.begin(pending ?? { kind: 'all' });
          pending = null;
          outcome = begun;
          if (!begun.exists) {
            if (begun.gone) return 'done';
            session.notice(begun.message as string);
          }
        } else if (await session.catchUp()) return 'progress';
      } catch (error) {
        if (!unreachable(error)) throw error;
        // A read cut short after some of it was written goes on from there, never twice.
        session.resume();
        session.notice(
          `cannot reach the target of job ${session.job.id}: ${sentence(toYonderError(error).message)}; retrying.`,
        );
        return 'idle';
      }
      // Once terminal, one more read finds whatever the job wrote last.
      if (wasTerminal) return 'done';
      return isTerminal(session.job.state) ? 'progress' : 'idle';
    },
    {
      backoff: context.backoff,
      clock: context.clock,
      ...(options.signal ? { signal: options.signal } : {}),
      ceilingMs: () =>
        Math.max(context.backoff.maxMs, (session.job.profileSnapshot.pollSeconds ?? 2) * 1000),
    },
  );
  await session.save();
  return {
    ...(session.begun ? { exists: true } : { exists: false, message: outcome.message }),
    job: session.job,
    start: outcome.start,
    end: session.offset,
    size: session.size,
    ...(outcome.kept ? { kept: outcome.kept } : {}),
    ...(loop === 'aborted' ? { aborted: true } : {}),
  };
}
