/** `yonder logs`: a job's output byte for byte, its last lines or bytes or all of it, or followed until the job ends. */
import { type JobManager, toYonderError } from '@yonder/core';
import { isTerminal } from '@yonder/core/backend-kit';
import { integerOption, parse } from '../../args.js';
import type { Command } from '../../command.js';
import type { Io } from '../../output.js';
import { UsageError } from '../../usage-error.js';
import {
  endingLine,
  jsonOutput,
  type LogOptions,
  type LogOutput,
  type LogResult,
  ndjsonOutput,
  rawOutput,
} from './log-output.js';

const HELP = `Usage: yonder logs JOB [-n N | -c N | --all] [-f] [--json]

Print the job's output exactly as the job wrote it (bytes, whatever their encoding): all of it
for a job that has ended, as docker and kubectl print a log; the last 10 lines of a job still
running (stderr says so when there is more, and how to see it); or what the options ask for.

  -n, --lines N   the last N lines (a last line without a newline counts), however many
  -c, --bytes N   the last N bytes
      --all       the whole log
  -f, --follow    then keep printing what the job writes until it ends; a line on stderr says
                  how it ended ("yonder: job ID failed (exit 3)") and the exit status is 0:
                  "yonder wait" is the command whose exit status is the job's. Ctrl-C stops
                  following (exit 130).
      --json      one JSON document: {"result":{"data":BASE64,"job","exists","start","end",
                  "size"},"ok":true} (start and end are byte offsets in the log); with --follow,
                  one JSON line per chunk {"type":"chunk","start","end","data":BASE64}, then
                  {"type":"end",...,"job":{"id","state","exitCode","signal","reason"}}

The output is read in bounded chunks (YONDER_LOG_CHUNK_BYTES, default 4 MiB): memory stays small
whatever the log's size. When the target cannot be reached, the end of the log as yonder last
read it (up to 64 KiB) is printed instead, with a line on stderr saying when it was read; with
--follow, yonder then retries until the target is back (so too when nothing was kept, or when
the connection drops midway: it goes on from the last byte printed, never printing one twice).
Exit status: 0; 1 when the log cannot be read or the job ran and its log is gone; 130 after
Ctrl-C; 141 when stdout closed early.
`;

/** How many lines of a running job's log are shown when no range is asked for. */
const RUNNING_TAIL = 10;

/**
 * The range the arguments ask for, or null when they ask for none (then the job decides: all of
 * an ended job's log, the tail of a running one's).
 */
function range(
  values: Record<string, unknown>,
): Pick<LogOptions, 'lines' | 'bytes' | 'all'> | null {
  const given = ['lines', 'bytes', 'all'].filter((name) => values[name] !== undefined);
  if (given.length > 1)
    throw new UsageError(
      `Give one of --lines, --bytes and --all, not ${given.map((name) => `--${name}`).join(' and ')}.`,
    );
  if (values.all) return { all: true };
  const bytes = integerOption(values.bytes, 'bytes', 0);
  if (bytes !== undefined) return { bytes };
  const lines = integerOption(values.lines, 'lines', 0);
  return lines === undefined ? null : { lines };
}

/** YONDER_LOG_CHUNK_BYTES: bytes per read, a whole number of at least 1 (default: core's). */
function chunkSize(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new UsageError(
      `YONDER_LOG_CHUNK_BYTES must be a whole number of at least 1, got "${value}".`,
    );
  return Number(value);
}

/** What stderr says when the log shown is the kept tail. */
function keptLine(result: LogResult): string {
  const kept = result.kept;
  if (!kept) return '';
  const range = `bytes ${result.start}-${result.end} of ${result.size}`;
  const partial = kept.complete ? '' : '; that is all that was kept, less than asked for';
  return `yonder: cannot reach the target of job ${result.job.id} (${kept.reason}); this is the end of its log as read at ${kept.at} (${range}${partial}).\n`;
}

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    {
      lines: { type: 'string', short: 'n' },
      bytes: { type: 'string', short: 'c' },
      all: { type: 'boolean' },
      follow: { type: 'boolean', short: 'f' },
      json: { type: 'boolean' },
    },
    'logs',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError('Name one job: yonder logs JOB [-n N | -c N | --all] [-f] [--json]');
  const reference = positionals[0] as string;
  const chunkBytes = chunkSize(io.env.YONDER_LOG_CHUNK_BYTES);
  const manager = runtime().manager;
  const asked = range(values);
  // Nothing asked: all of an ended job's log; the tail of a running one's (follow goes on from it).
  const ended =
    asked === null && !values.follow
      ? isTerminal((await manager.status([reference], { refresh: false }))[0]?.state ?? 'unknown')
      : false;
  const options: LogOptions = {
    ...(asked ?? (ended ? { all: true } : { lines: RUNNING_TAIL })),
    ...(chunkBytes === undefined ? {} : { chunkBytes }),
  };
  const output = values.json ? (values.follow ? ndjsonOutput(io) : jsonOutput(io)) : rawOutput(io);
  const onNotice = (text: string): void => io.stderr(`yonder: ${text}\n`);
  if (values.follow) return follow(io, manager, reference, { ...options, onNotice }, output);
  const signals = io.closed ? { signal: io.closed } : {};
  let result: LogResult;
  try {
    result = await manager.streamLogs(reference, (chunk) => output.write(chunk), {
      ...options,
      ...signals,
      onNotice,
    });
  } catch (error) {
    if (await output.fail(toYonderError(error).toJSON())) return 1;
    throw error;
  }
  io.stderr(keptLine(result));
  if (asked === null && !ended && !values.json && !result.kept && result.start > 0)
    io.stderr(
      `yonder: the last ${RUNNING_TAIL} lines of the log of job ${result.job.id}, still ${result.job.state} (bytes ${result.start}-${result.end} of ${result.size}); "yonder logs ${result.job.id} --all" prints all of it, -f follows it.\n`,
    );
  if (!result.exists) io.stderr(`yonder: ${result.message ?? 'the log does not exist.'}\n`);
  await output.finish(result);
  return result.gone ? 1 : 0;
};

async function follow(
  io: Io,
  manager: JobManager,
  reference: string,
  options: LogOptions,
  output: LogOutput,
): Promise<number> {
  const interrupted = new AbortController();
  const stop = (): void => interrupted.abort();
  process.once('SIGINT', stop);
  try {
    const signal = io.closed
      ? AbortSignal.any([interrupted.signal, io.closed])
      : interrupted.signal;
    const result = await manager.follow(reference, (chunk) => output.write(chunk), {
      ...options,
      signal,
    });
    if (result.gone) io.stderr(`yonder: ${result.message}\n`);
    await output.finish(result);
    if (interrupted.signal.aborted) return 130;
    if (result.gone) return 1;
    // Its reader gone, the output ends without a word (the exit status says it: 141).
    if (!result.aborted && !io.closed?.aborted) io.stderr(endingLine(result.job));
    return 0;
  } finally {
    process.removeListener('SIGINT', stop);
  }
}
