/** Jobs as a table for people (`list`): kept apart from output.ts so that commands printing no table never load the display-width tables. */
import type { JobRecord, JobState } from '@yonder/core';
import { formatTable } from './format-table.js';
import { type Io, paintState } from './output.js';

function age(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

function outcome(job: JobRecord): string {
  if (job.signal) return job.signal;
  if (job.exitCode !== null) return String(job.exitCode);
  return '-';
}

/** A table of jobs: id, name, profile, state, exit, created; cells cut at 40 columns. */
export function jobTable(io: Io, jobs: readonly JobRecord[]): string {
  return formatTable(
    ['ID', 'NAME', 'PROFILE', 'STATE', 'EXIT', 'CREATED'],
    jobs.map((job) => [job.id, job.name, job.profile, job.state, outcome(job), age(job.createdAt)]),
    {
      maxCellWidth: 40,
      paint: (cell, column) => (column === 3 ? paintState(io, cell as JobState) : cell),
    },
  );
}
