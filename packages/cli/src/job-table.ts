/** Jobs as a table for people (`list`), a run of rows at a time: kept apart from output.ts so that commands printing no table never load the display-width tables. */
import type { JobRecord, JobState } from '@yonder/core';
import { layoutTable } from './format-table.js';
import { type Io, paintState } from './output.js';

function age(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

/** What a table of jobs shows of each. */
export type TableJob = Pick<
  JobRecord,
  'id' | 'name' | 'profile' | 'state' | 'exitCode' | 'signal' | 'createdAt'
>;

function outcome(job: TableJob): string {
  if (job.signal) return job.signal;
  if (job.exitCode !== null) return String(job.exitCode);
  return '-';
}

/**
 * A table of jobs (id, name, profile, state, exit, created; cells cut at 40 columns), a run of
 * `rowsPerPiece` rows at a time: a long listing is written as it is made.
 */
export function* jobTablePieces(
  io: Io,
  jobs: readonly TableJob[],
  rowsPerPiece = 1000,
): Generator<string> {
  const now = Date.now();
  const ages = new Map<string, string>();
  const cell = (row: number, column: number): string => {
    const job = jobs[row] as TableJob;
    if (column === 0) return job.id;
    if (column === 1) return job.name;
    if (column === 2) return job.profile;
    if (column === 3) return job.state;
    if (column === 4) return outcome(job);
    const shown = age(job.createdAt, now);
    // One string per age shown ("3d ago"), however many jobs share it.
    const known = ages.get(shown);
    if (known !== undefined) return known;
    ages.set(shown, shown);
    return shown;
  };
  const table = layoutTable(
    ['ID', 'NAME', 'PROFILE', 'STATE', 'EXIT', 'CREATED'],
    jobs.length,
    cell,
    {
      maxCellWidth: 40,
      paint: (text, column) => (column === 3 ? paintState(io, text as JobState) : text),
    },
  );
  yield table.header;
  for (let from = 0; from < jobs.length; from += rowsPerPiece)
    yield table.lines(from, from + rowsPerPiece);
}

/** A table of jobs: id, name, profile, state, exit, created; cells cut at 40 columns. */
export function jobTable(io: Io, jobs: readonly TableJob[]): string {
  return [...jobTablePieces(io, jobs)].join('');
}
