/** Where `yonder logs` writes a log: stdout as raw bytes, one JSON document with the bytes in base64 (streamed, in bounded memory), or NDJSON chunks for `--follow`. */
import type { JobManager, JobRecord, LogChunkV1 } from '@yonder/core';
import type { Io } from '../../output.js';

/** What `JobManager.streamLogs` and `follow` take besides the writer (core's root names neither). */
export type LogOptions = NonNullable<Parameters<JobManager['streamLogs']>[2]>;

/** How reading a job's log went. */
export type LogResult = Awaited<ReturnType<JobManager['streamLogs']>>;

/** Writes the chunks of a log, then its end. */
export interface LogOutput {
  /** Take the next chunk; resolves when stdout can take more. */
  write(chunk: LogChunkV1): Promise<void>;
  /** Say how the read went (JSON: the rest of the document, or the last line). */
  finish(result: LogResult): Promise<void>;
  /** A read that failed midway: close what was begun (JSON) and say so. False: nothing was begun. */
  fail(error: { code: string; message: string }): Promise<boolean>;
}

function writer(io: Io): (data: string | Uint8Array) => Promise<void> {
  return io.write ?? (async (data) => io.stdout(data));
}

/** The log's bytes on stdout, exactly as the job wrote them. */
export function rawOutput(io: Io): LogOutput {
  const write = writer(io);
  return {
    write: (chunk) => write(chunk.data),
    finish: async () => {},
    fail: async () => false,
  };
}

/** The job, as the end of a JSON answer shows it. */
function jobSummary(job: JobRecord): Record<string, unknown> {
  return {
    id: job.id,
    state: job.state,
    exitCode: job.exitCode,
    signal: job.signal,
    reason: job.reason,
  };
}

/** What a result says besides the bytes. */
function resultFields(result: LogResult): Record<string, unknown> {
  return {
    job: result.job.id,
    exists: result.exists,
    start: result.start,
    end: result.end,
    size: result.size,
    ...(result.message === undefined ? {} : { message: result.message }),
    ...(result.kept ? { kept: result.kept } : {}),
  };
}

/**
 * One JSON document, `{"result":{"data":"<base64>","job":…,"exists","start","end","size"},"ok":true}`,
 * written as the bytes arrive: `ok` comes last, so a read that fails midway still ends in a
 * valid document (`"ok":false` with the error). Base64 is written three bytes at a time, so
 * the pieces join into one string.
 */
export function jsonOutput(io: Io): LogOutput {
  const write = writer(io);
  let begun = false;
  let carry = Buffer.alloc(0);
  const begin = async (): Promise<void> => {
    if (!begun) await write('{"result":{"data":"');
    begun = true;
  };
  const flush = async (): Promise<void> => {
    await begin();
    if (carry.length > 0) await write(carry.toString('base64'));
    carry = Buffer.alloc(0);
  };
  const tail = (fields: Record<string, unknown>): string => {
    const rest = JSON.stringify(fields).slice(1);
    return rest === '}' ? '"}' : `",${rest}`;
  };
  return {
    async write(chunk) {
      await begin();
      const bytes = carry.length > 0 ? Buffer.concat([carry, chunk.data]) : chunk.data;
      const whole = bytes.length - (bytes.length % 3);
      carry = Buffer.from(bytes.subarray(whole));
      if (whole > 0) await write(bytes.subarray(0, whole).toString('base64'));
    },
    async finish(result) {
      await flush();
      await write(`${tail(resultFields(result))},"ok":true}\n`);
    },
    async fail(error) {
      if (!begun) return false;
      await flush();
      await write(`${tail({ incomplete: true })},"ok":false,"error":${JSON.stringify(error)}}\n`);
      return true;
    },
  };
}

/**
 * `--follow --json`: one JSON line per chunk, `{"type":"chunk","start","end","data":"<base64>"}`,
 * then `{"type":"end",…,"job":{"id","state","exitCode","signal","reason"}}`.
 */
export function ndjsonOutput(io: Io): LogOutput {
  const write = writer(io);
  return {
    write: (chunk) =>
      write(
        `${JSON.stringify({ type: 'chunk', start: chunk.start, end: chunk.offset, data: chunk.data.toString('base64') })}\n`,
      ),
    finish: (result) =>
      write(
        `${JSON.stringify({ type: 'end', ...resultFields(result), ...(result.aborted ? { aborted: true } : {}), job: jobSummary(result.job) })}\n`,
      ),
    fail: async () => false,
  };
}

/** How a followed job ended, for stderr: `yonder: job ID failed (exit 3)`. */
export function endingLine(job: JobRecord): string {
  const details: string[] = [];
  if (job.signal) details.push(`signal ${job.signal}`);
  else if (job.exitCode !== null) details.push(`exit ${job.exitCode}`);
  // A reason that only repeats the exit code or the signal is left out; one that says more
  // (`exit code 9 or 137 (…)` of a job with no exit code known) is not.
  const repeats =
    job.reason?.startsWith('killed by ') ||
    (job.exitCode !== null && job.reason?.startsWith(`exit code ${job.exitCode}`));
  if (job.reason && !repeats && job.state !== 'succeeded') details.push(job.reason);
  return `yonder: job ${job.id} ${job.state}${details.length > 0 ? ` (${details.join(', ')})` : ''}\n`;
}
