/** The server's index of every job in the ledger, as table rows: kept current by the watch, filtered, sorted and paged in memory so the page asks for one page at a time. */
import type { JobRecord, JobState } from '@yonder/core';
import { isTerminal } from '@yonder/core/backend-kit';
import { jobDuration } from '../shared/job-duration.js';
import { type JobQuery, matchesJobQuery } from './job-query.js';

/** What the table shows of a job. */
export interface JobRow {
  readonly id: string;
  readonly name: string;
  readonly profile: string;
  readonly backend: string;
  readonly target: string;
  readonly state: JobState;
  readonly nativeState: string | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly reason: string | null;
  readonly failureKind: string | null;
  readonly externalId: string | null;
  readonly createdAt: string;
  readonly submittedAt: string | null;
  /** When the job itself started, as its target recorded it; null until known. */
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly updatedAt: string;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly cancelRequested: boolean;
}

/** A target whose last poll failed, for the banner. */
export interface StaleTarget {
  readonly backend: string;
  readonly target: string;
  readonly profiles: readonly string[];
  readonly message: string;
  /** The earliest time one of its active jobs recorded the error. */
  readonly since: string;
  readonly jobs: number;
}

export const SORT_KEYS = [
  'created',
  'name',
  'state',
  'profile',
  'backend',
  'submitted',
  'finished',
  'duration',
  'exit',
  'id',
] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface PageRequest {
  readonly query: JobQuery;
  readonly sort: SortKey;
  readonly descending: boolean;
  readonly offset: number;
  readonly limit: number;
}

export interface JobPage {
  readonly total: number;
  readonly offset: number;
  readonly rows: readonly JobRow[];
  /** How many jobs of the whole ledger are in each state. */
  readonly states: Readonly<Record<string, number>>;
  readonly profiles: readonly string[];
}

export function toRow(job: JobRecord): JobRow {
  return {
    id: job.id,
    name: job.name,
    profile: job.profile,
    backend: job.backend,
    target: job.target,
    state: job.state,
    nativeState: job.nativeState,
    exitCode: job.exitCode,
    signal: job.signal,
    reason: job.reason,
    failureKind: job.failureKind,
    externalId: job.externalId,
    createdAt: job.createdAt,
    submittedAt: job.submittedAt,
    startedAt: job.startedAt ?? null,
    finishedAt: job.finishedAt,
    updatedAt: job.updatedAt,
    error: job.error ? { code: job.error.code, message: job.error.message } : null,
    cancelRequested: job.cancel !== null,
  };
}

type Compare = (a: JobRow, b: JobRow) => number;

const text = (pick: (row: JobRow) => string | null): Compare => {
  return (a, b) => (pick(a) ?? '').localeCompare(pick(b) ?? '');
};
const number = (pick: (row: JobRow) => number | null): Compare => {
  return (a, b) => (pick(a) ?? Number.NEGATIVE_INFINITY) - (pick(b) ?? Number.NEGATIVE_INFINITY);
};

function comparator(key: SortKey, now: number): Compare {
  switch (key) {
    case 'name':
      return text((row) => row.name.toLowerCase());
    case 'state':
      return text((row) => row.state);
    case 'profile':
      return text((row) => row.profile.toLowerCase());
    case 'backend':
      return text((row) => row.backend);
    case 'submitted':
      return text((row) => row.submittedAt);
    case 'finished':
      return text((row) => row.finishedAt);
    case 'duration':
      return number((row) => jobDuration(row, now));
    case 'exit':
      return number((row) => row.exitCode);
    case 'id':
      return text((row) => row.id);
    default:
      return text((row) => row.createdAt);
  }
}

/** Every job of the ledger as a row, with what the page asks of them. */
export class JobIndex {
  private readonly rows = new Map<string, JobRow>();

  get size(): number {
    return this.rows.size;
  }

  /** Replace everything with these jobs (at start, and after the watch lagged). */
  reset(jobs: readonly JobRecord[]): void {
    this.rows.clear();
    for (const job of jobs) this.rows.set(job.id, toRow(job));
  }

  upsert(job: JobRecord): JobRow {
    const row = toRow(job);
    this.rows.set(job.id, row);
    return row;
  }

  remove(id: string): void {
    this.rows.delete(id);
  }

  get(id: string): JobRow | undefined {
    return this.rows.get(id);
  }

  /** One page of the jobs that match, in the order asked for (ties newest first). */
  page(request: PageRequest): JobPage {
    const now = Date.now();
    const matching: JobRow[] = [];
    const states: Record<string, number> = {};
    const profiles = new Set<string>();
    for (const row of this.rows.values()) {
      states[row.state] = (states[row.state] ?? 0) + 1;
      profiles.add(row.profile);
      if (matchesJobQuery(request.query, row)) matching.push(row);
    }
    const primary = comparator(request.sort, now);
    const newest = comparator('created', now);
    const direction = request.descending ? -1 : 1;
    matching.sort((a, b) => direction * primary(a, b) || -newest(a, b) || (a.id < b.id ? -1 : 1));
    // Past the end (the jobs went while the page was open): the last page, not an empty one.
    const lastPage = Math.max(0, Math.floor((matching.length - 1) / request.limit) * request.limit);
    const offset = request.offset < matching.length ? Math.max(0, request.offset) : lastPage;
    return {
      total: matching.length,
      offset,
      rows: matching.slice(offset, offset + request.limit),
      states,
      profiles: [...profiles].sort((a, b) => a.localeCompare(b)),
    };
  }

  /** Targets with an active job whose last poll (or cancel) recorded an error. */
  staleTargets(): StaleTarget[] {
    const targets = new Map<
      string,
      {
        backend: string;
        target: string;
        profiles: Set<string>;
        message: string;
        since: string;
        jobs: number;
      }
    >();
    for (const row of this.rows.values()) {
      if (!row.error || isTerminal(row.state)) continue;
      const key = `${row.backend}|${row.target}`;
      const entry = targets.get(key) ?? {
        backend: row.backend,
        target: row.target,
        profiles: new Set<string>(),
        message: row.error.message,
        since: row.updatedAt,
        jobs: 0,
      };
      entry.profiles.add(row.profile);
      entry.jobs += 1;
      if (row.updatedAt < entry.since) entry.since = row.updatedAt;
      targets.set(key, entry);
    }
    return [...targets.values()].map((entry) => ({ ...entry, profiles: [...entry.profiles] }));
  }
}
