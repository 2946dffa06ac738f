/** How the backend runs a Slurm command on the target and reads its answer or its failure. */
import { type BackendContextV1, type RunResultV1, YonderError } from '@yonder/core';
import {
  parseSacct,
  parseSqueue,
  SACCT_FIELDS,
  type SacctRow,
  SQUEUE_FIELDS,
  type SqueueRow,
} from './parse.js';
import { RUN_SLURM_COMMAND } from './scripts.js';
import type { SlurmOptions } from './slurm-options.js';

export const QUERY_TIMEOUT_MS = 60_000;
export const CANCEL_TIMEOUT_MS = 120_000;
/** At most this many job ids or names in one squeue or sacct command line. */
export const QUERY_CHUNK = 500;

/** squeue's fields, in the order `parseSqueue` reads them. */
const SQUEUE_FORMAT = `--format=${SQUEUE_FIELDS.map(([letter]) => letter).join('|')}`;
/** sacct's fields, in the order `parseSacct` reads them. */
const SACCT_FORMAT = `--format=${SACCT_FIELDS.map(([name]) => name).join(',')}`;
/** How far before the earliest job's creation sacct looks (clocks and queues drift). */
const SACCT_LOOKBACK_MS = 86_400_000;

/** Run one Slurm command (`sbatch`, `squeue`…) in the clean environment of RUN_SLURM_COMMAND, `input` on its stdin. */
export function slurmCommand(
  context: BackendContextV1,
  options: SlurmOptions,
  argv: readonly string[],
  timeoutMs = QUERY_TIMEOUT_MS,
  input?: string,
): Promise<RunResultV1> {
  return context.transport.runScript(RUN_SLURM_COMMAND, [options.binDir ?? '', ...argv], {
    timeoutMs,
    ...(input === undefined ? {} : { input }),
  });
}

/** What a failed command said (the end of stderr, else of stdout), or its exit status. */
export function commandFailure(result: RunResultV1): string {
  const text = (result.stderr.trim() || result.stdout.trim()).slice(-1200);
  return text || `exit status ${result.exitCode ?? result.signal}`;
}

/**
 * The first line of a Slurm command's stderr that says the scheduler did not answer properly
 * (`squeue: error: …`, `slurm_load_jobs error: …`, a database or controller that cannot be
 * reached), or null. Slurm 22.05/23.02 exit 0 after some of these, so the exit status alone
 * does not tell a healthy answer.
 */
export function schedulerError(stderr: string): string | null {
  const line = stderr
    .split('\n')
    .find((text) =>
      /\berror:|Problem talking to the database|Socket timed out|Unable to contact slurm controller/i.test(
        text,
      ),
    );
  return line === undefined ? null : line.trim();
}

/** Whether a query answered: exit status 0 and no scheduler error on stderr. */
export function answered(result: RunResultV1): boolean {
  return result.exitCode === 0 && schedulerError(result.stderr) === null;
}

/** A Slurm command failed to answer: the scheduler is unavailable (never a job outcome). */
export function schedulerUnavailable(command: string, result: RunResultV1): YonderError {
  return new YonderError('E_SCHEDULER_UNAVAILABLE', `${command} failed: ${commandFailure(result)}`);
}

/**
 * squeue's rows for a selection (its flags, before the format).
 * @throws YonderError `E_SCHEDULER_UNAVAILABLE` when squeue does not answer.
 */
export async function squeueRows(
  context: BackendContextV1,
  options: SlurmOptions,
  selection: readonly string[],
): Promise<SqueueRow[]> {
  const queue = await slurmCommand(context, options, ['squeue', ...selection, SQUEUE_FORMAT]);
  if (!answered(queue)) throw schedulerUnavailable('squeue', queue);
  return parseSqueue(queue.stdout);
}

/**
 * sacct's arguments for the allocation rows of one selection (`--jobs=…` or `--name=…`), from
 * a day before the earliest of `createdAt` until now, in the fields `parseSacct` reads.
 */
export function sacctArguments(selection: string, createdAt: readonly string[]): string[] {
  const earliest = [...createdAt].sort()[0] as string;
  const since = new Date(Date.parse(earliest) - SACCT_LOOKBACK_MS).toISOString();
  return [
    '--noheader',
    '--parsable2',
    '--allocations',
    `--starttime=${since.slice(0, 19)}`,
    '--endtime=now',
    selection,
    SACCT_FORMAT,
  ];
}

/**
 * sacct's allocation rows for one selection (see `sacctArguments`); `rows` is null when sacct
 * did not answer (see `result`).
 */
export async function sacctRows(
  context: BackendContextV1,
  options: SlurmOptions,
  selection: string,
  createdAt: readonly string[],
): Promise<{ result: RunResultV1; rows: SacctRow[] | null }> {
  const result = await slurmCommand(context, options, [
    'sacct',
    ...sacctArguments(selection, createdAt),
  ]);
  return { result, rows: answered(result) ? parseSacct(result.stdout) : null };
}

/** Items in runs of at most `size`, for command lines of bounded length. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let index = 0; index < items.length; index += size)
    out.push(items.slice(index, index + size));
  return out;
}
