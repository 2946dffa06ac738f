/** What `yonder list` lists (its filters, from the command line) and how it shows it. */
import type { JobState } from '@yonder/core';
import { durationOption } from '../../args.js';
import { UsageError } from '../../usage-error.js';

/** Which jobs a list shows. */
export interface ListSelection {
  readonly all: boolean;
  readonly refresh: boolean;
  readonly states?: JobState[];
  readonly profile?: string;
  /** Only jobs created at or after this time (ISO 8601). */
  readonly since?: string;
  /** At most this many, the newest. */
  readonly limit?: number;
}

/** How a list shows its jobs. */
export type ListShape =
  | { readonly kind: 'table' | 'json' | 'quiet' }
  | { readonly kind: 'format'; readonly format: string };

/** `--limit N`: a whole number of jobs, at least 1. */
export function limitOption(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^[0-9]+$/.test(text) || Number(text) < 1)
    throw new UsageError(`--limit must be a whole number of jobs, at least 1, got "${text}".`);
  return Number(text);
}

/** `--since WHEN`: a duration back from now (`2h`, `7d`) or a date and time (ISO 8601). */
export function sinceOption(value: unknown, now = Date.now()): string | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (/^[0-9]/.test(text) && !/^[0-9]{4}-/.test(text))
    return new Date(now - (durationOption(text, 'since') as number)).toISOString();
  const time = /^[0-9]{4}-[0-9]{2}-[0-9]{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(time))
    throw new UsageError(
      `--since must be a duration such as 2h or 7d, or a date such as 2026-12-01 or 2026-12-01T09:30:00Z, got "${text}".`,
    );
  return new Date(time).toISOString();
}

/** The jobs of a selection's `since` and `limit`, from a listing already filtered otherwise. */
export function sinceAndLimit<T extends { readonly createdAt: string }>(
  jobs: T[],
  selection: ListSelection,
): T[] {
  const since = selection.since;
  const recent = since === undefined ? jobs : jobs.filter((job) => job.createdAt >= since);
  return selection.limit === undefined ? recent : recent.slice(0, selection.limit);
}
