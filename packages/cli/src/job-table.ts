/** Jobs as a table for people (`list`), a run of rows at a time: kept apart from output.ts so that commands printing no table never load the display-width tables. */
import type { JobRecord, JobState } from '@yonder/core';
import { isWaiting } from '@yonder/core/backend-kit';
import { layoutTable } from './format-table.js';
import { type Io, paintState } from './output.js';

function age(iso: string, now = Date.now()): string {
  return ageOf(Date.parse(iso), now);
}

function ageOf(time: number, now: number): string {
  const seconds = Math.max(0, Math.round((now - time) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

/** `YYYY-MM-DDTHH:MM:SS…Z`, as `toISOString` writes a time: the hour is its first 13 characters. */
const Z = 'Z'.charCodeAt(0);
const UTC_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/**
 * Ages as `age` shows them, one string for each age shown, however many jobs share it; an
 * hour all of whose times show the same age ("3d ago") is worked out once, not once a job.
 */
function createAges(now: number): (iso: string) => string {
  const shown = new Map<string, string>();
  const hours = new Map<string, string | null>();
  const one = (text: string): string => {
    const known = shown.get(text);
    if (known !== undefined) return known;
    shown.set(text, text);
    return text;
  };
  return (iso) => {
    // Only a time in UTC is in the hour its first 13 characters name.
    if (iso.charCodeAt(iso.length - 1) !== Z || !UTC_ISO.test(iso)) return one(age(iso, now));
    const hour = iso.slice(0, 13);
    let whole = hours.get(hour);
    if (whole === undefined) {
      const start = Date.parse(`${hour}:00:00.000Z`);
      const first = ageOf(start, now);
      whole = first === ageOf(start + 3_599_999, now) ? one(first) : null;
      hours.set(hour, whole);
    }
    return whole ?? one(age(iso, now));
  };
}

/** What a table of jobs shows of each (the native state, when known, to say a job is stopped). */
export type TableJob = Pick<
  JobRecord,
  'id' | 'name' | 'profile' | 'state' | 'exitCode' | 'signal' | 'createdAt'
> &
  Partial<Pick<JobRecord, 'nativeState' | 'submittedAt' | 'after'>>;

/**
 * The STATE cell: `waiting` for a job yonder holds back for its parents; a running job that is
 * stopped says so; else its state.
 */
function stateCell(job: TableJob): string {
  if ('after' in job && isWaiting(job as Parameters<typeof isWaiting>[0])) return 'waiting';
  return job.state === 'running' && job.nativeState === 'stopped' ? 'running (stopped)' : job.state;
}

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
  const ageOfJob = createAges(Date.now());
  const cell = (row: number, column: number): string => {
    const job = jobs[row] as TableJob;
    if (column === 0) return job.id;
    if (column === 1) return job.name;
    if (column === 2) return job.profile;
    if (column === 3) return stateCell(job);
    if (column === 4) return outcome(job);
    return ageOfJob(job.createdAt);
  };
  const table = layoutTable(
    ['ID', 'NAME', 'PROFILE', 'STATE', 'EXIT', 'CREATED'],
    jobs.length,
    cell,
    {
      maxCellWidth: 40,
      paint: (text, column) => {
        if (column !== 3) return text;
        const at = text.indexOf(' ');
        return at < 0
          ? paintState(io, text as JobState | 'waiting')
          : `${paintState(io, text.slice(0, at) as JobState)}${text.slice(at)}`;
      },
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
