import type { FailureKind, FoundObservationV1 } from '@yonder/core';
import { normaliseState, signalName } from '@yonder/core/backend-kit';

/** One line of squeue's output (see `SQUEUE_FIELDS`). */
export interface SqueueRow {
  jobId: string;
  displayId: string;
  state: string;
  name: string;
  comment: string;
  reason: string;
  /** `%S`, when asked for: when the job started (or, while pending, is expected to); `N/A`. */
  startTime?: string;
}

/** One line of sacct's `--parsable2` output (see `SACCT_FIELDS`). */
export interface SacctRow {
  jobId: string;
  displayId: string;
  name: string;
  state: string;
  exitCode: string;
  comment: string;
  /** `Start` and `End`, when asked for: `2026-12-01T14:02:21` (TZ=UTC), or `Unknown`/`None`. */
  start?: string;
  end?: string;
}

/**
 * squeue's `--format` letters the backend asks for, in order, and the row field each fills.
 * The comment (anyone may set it) may hold "|": it takes whatever lies between the fields
 * before it and those after it.
 */
export const SQUEUE_FIELDS = [
  ['%A', 'jobId'],
  ['%i', 'displayId'],
  ['%T', 'state'],
  ['%j', 'name'],
  ['%S', 'startTime'],
  ['%k', 'comment'],
  ['%r', 'reason'],
] as const satisfies ReadonlyArray<readonly [string, keyof SqueueRow]>;

/** The layout of the fixtures recorded before start times were asked for: `%A|%i|%T|%j|%k|%r`. */
export const SQUEUE_FIELDS_WITHOUT_TIMES = SQUEUE_FIELDS.filter(([letter]) => letter !== '%S');

/** sacct's `--format` fields the backend asks for, in order; the comment (last) may hold "|". */
export const SACCT_FIELDS = [
  ['JobIDRaw', 'jobId'],
  ['JobID', 'displayId'],
  ['JobName', 'name'],
  ['State', 'state'],
  ['ExitCode', 'exitCode'],
  ['Start', 'start'],
  ['End', 'end'],
  ['Comment', 'comment'],
] as const satisfies ReadonlyArray<readonly [string, keyof SacctRow]>;

/** The layout of the fixtures recorded before times were asked for: `JobIDRaw,…,ExitCode,Comment`. */
export const SACCT_FIELDS_WITHOUT_TIMES = SACCT_FIELDS.filter(
  ([name]) => name !== 'Start' && name !== 'End',
);

type Layout = ReadonlyArray<readonly [string, string]>;

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line.trim() !== '');
}

/**
 * The named fields of one `|`-separated line in `layout`, the comment taking every part between
 * the fields before it and those after it; null when the line has too few parts or its job id
 * is not a number.
 */
function splitLine(line: string, layout: Layout): Record<string, string> | null {
  const parts = line.split('|');
  if (parts.length < layout.length) return null;
  const at = layout.findIndex(([, field]) => field === 'comment');
  const after = layout.length - at - 1;
  const out: Record<string, string> = {};
  layout.forEach(([, field], index) => {
    if (index < at) out[field] = parts[index] as string;
    else if (index > at) out[field] = parts[parts.length - (layout.length - index)] as string;
  });
  out.comment = parts.slice(at, parts.length - after).join('|');
  return /^\d+$/.test(out.jobId ?? '') ? out : null;
}

/**
 * Parse squeue rows (in `layout`, by default the backend's own) leniently: lines that do not
 * have the shape are skipped, never thrown on.
 */
export function parseSqueue(text: string, layout: Layout = SQUEUE_FIELDS): SqueueRow[] {
  const rows: SqueueRow[] = [];
  for (const line of lines(text)) {
    const fields = splitLine(line, layout);
    if (!fields) continue;
    const row = fields as unknown as SqueueRow;
    if (row.comment === '(null)') row.comment = '';
    rows.push(row);
  }
  return rows;
}

/** Parse sacct rows (in `layout`, by default the backend's own) leniently, like parseSqueue. */
export function parseSacct(text: string, layout: Layout = SACCT_FIELDS): SacctRow[] {
  const rows: SacctRow[] = [];
  for (const line of lines(text)) {
    const fields = splitLine(line, layout);
    if (fields) rows.push(fields as unknown as SacctRow);
  }
  return rows;
}

/**
 * A time as Slurm prints it with `TZ=UTC SLURM_TIME_FORMAT=standard` (`2026-12-01T14:02:21`)
 * as an ISO time; undefined for `Unknown`, `None`, `N/A` or anything else.
 */
export function slurmTime(text: string | undefined): string | undefined {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)$/.exec((text ?? '').trim());
  if (!match) return undefined;
  const date = new Date(`${match[1]}Z`);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** `sbatch --version`: `slurm 23.11.4` or Debian's `slurm-wlm 22.05.8`. */
export function parseSlurmVersion(
  text: string,
): { major: number; minor: number; patch: number; text: string } | null {
  const match = /^(?:slurm|slurm-wlm)\s+(\d+)\.(\d+)(?:\.(\d+))?/im.exec(text.trim());
  if (!match) return null;
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3] ?? 0),
    text: `${match[1]}.${match[2]}${match[3] === undefined ? '' : `.${match[3]}`}`,
  };
}

/** A value from `scontrol show config` (`Key = value` lines). */
export function parseConfigValue(text: string, key: string): string | null {
  for (const line of lines(text)) {
    const at = line.indexOf('=');
    if (at < 0) continue;
    if (line.slice(0, at).trim().toLowerCase() === key.toLowerCase())
      return line.slice(at + 1).trim();
  }
  return null;
}

/** `MinJobAge = 30 sec` → 30. */
export function parseMinJobAge(text: string): number | null {
  const value = parseConfigValue(text, 'MinJobAge');
  const match = value ? /^(\d+)/.exec(value) : null;
  return match ? Number(match[1]) : null;
}

/**
 * The id line of `sbatch --parsable`: `123` or `123;cluster`. Informational lines may come
 * first: the last line that has the shape wins.
 */
export function parseSbatchId(stdout: string): { id: string; cluster: string | null } | null {
  const found = lines(stdout)
    .map((line) => /^(\d+)(?:;(\S+))?$/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null);
  const last = found.at(-1);
  return last ? { id: last[1] as string, cluster: last[2] ?? null } : null;
}

/** The reason sbatch gave for refusing a job. */
export function sbatchFailure(stderr: string): string {
  const specific = /Batch job submission failed:\s*(.*)$/m.exec(stderr);
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const detail = lines.filter((line) => !/sleeping and retrying|retrying$/.test(line)).join('; ');
  return (
    specific ? `${detail || specific[1]}` : detail || 'sbatch failed without a message'
  ).slice(-1200);
}

/** Whether an sbatch failure is transient (worth a retry after looking the job up). */
export function isTransientSbatchFailure(stderr: string): boolean {
  return /Socket timed out|Unable to contact slurm controller|temporarily unable|temporarily disabled|Rate limit exceeded|try again|Requested nodes are busy/i.test(
    stderr,
  );
}

/** sacct's `ExitCode` (`code:signal`). */
export function parseExitCode(text: string): { exitCode: number | null; signal: string | null } {
  const match = /^(\d+):(\d+)$/.exec(text.trim());
  if (!match) return { exitCode: null, signal: null };
  const signal = Number(match[2]);
  return {
    exitCode: Number(match[1]),
    signal: signal > 0 ? signalName(signal) : null,
  };
}

/** A sacct or squeue state, with sacct's exit code, as an observation. */
export function slurmObservation(
  state: string,
  source: 'squeue' | 'sacct',
  details: { exitCode?: string; reason?: string } = {},
): FoundObservationV1 {
  const normalised = normaliseState(state, 'slurm');
  const parsed = parseExitCode(details.exitCode ?? '');
  let signal = parsed.signal;
  // Only a job that ran to its end has an exit code: not one killed by a signal, timed out or cancelled.
  let exitCode =
    normalised.state === 'succeeded'
      ? 0
      : signal !== null || normalised.state === 'cancelled' || normalised.reason === 'timeout'
        ? null
        : parsed.exitCode;
  // sacct up to 25.05 shows a status of 128 or more reduced by 128 (`exit 137` as `9:0`): a
  // code below 128 may be either, so it is named with both and recorded as no code at all
  // (the wrapper's exit-code file, when there is one, gives the exact status).
  let ambiguous: string | null = null;
  if (
    normalised.state === 'failed' &&
    source === 'sacct' &&
    exitCode !== null &&
    exitCode > 0 &&
    exitCode < 128
  ) {
    ambiguous = `exit code ${exitCode} or ${exitCode + 128} (Slurm's accounting shows exit codes of 128 and more reduced by 128)`;
    exitCode = null;
  }
  let failureKind: FailureKind | null = normalised.failureKind;
  let reason = normalised.reason;
  if (normalised.state === 'failed') {
    if (details.exitCode?.trim() === '0:53') {
      // slurmd could not set up the job's I/O (e.g. its output directory is gone): not the job's fault.
      failureKind = 'infrastructure';
      reason = 'job launch failed (I/O setup)';
      signal = null;
    }
    if (reason === null)
      reason = signal
        ? `killed by ${signal}`
        : (ambiguous ?? (exitCode !== null ? `exit code ${exitCode}` : null));
  }
  if (normalised.state === 'pending' && details.reason && details.reason !== 'None')
    reason = details.reason;
  // Slurm marks CANCELLED every job its scancel reached; any other end is the job's own.
  const endedOnItsOwn = TERMINAL_STATES.has(normalised.state) && normalised.state !== 'cancelled';
  return {
    kind: 'found',
    state: normalised.state,
    nativeState: state,
    exitCode,
    signal,
    reason,
    failureKind,
    source,
    ...(endedOnItsOwn ? { endedOnItsOwn } : {}),
  };
}

const TERMINAL_STATES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);
