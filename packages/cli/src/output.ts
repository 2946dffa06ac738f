/** How the CLI writes: where output goes, colour, the JSON envelope, and jobs in detail (tables are in job-table.ts, which loads the width tables). */
import type { JobRecord, JobState } from '@yonder/core';
import { listedJob } from '@yonder/core/backend-kit';
import { containerLine } from './container-options.js';
import { escapeControlCharacters } from './escape-control-characters.js';
import { watchStdout } from './stdout-pipe.js';

/** Where a command writes, and how. Progress and logs go to stderr; results to stdout. */
export interface Io {
  stdout: (text: string | Uint8Array) => void;
  stderr: (text: string) => void;
  /**
   * Write to stdout and wait until it can take more (backpressure); default: `stdout`. Done
   * with `data` once it resolves.
   */
  write?: (data: string | Uint8Array) => Promise<void>;
  /** Aborted when stdout's reader has gone (EPIPE): the command stops and ends quietly. */
  closed?: AbortSignal;
  /** Colour only on a terminal, never with NO_COLOR. */
  color: boolean;
  /** Whether stdout is a terminal (a live view redraws in place only there). */
  terminal?: boolean;
  /** Whether stderr is a terminal (progress lines rewritten in place only there). */
  stderrTerminal?: boolean;
  /** The terminal's height in rows now, when stdout is one (a live view never draws more). */
  rows?: () => number | undefined;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export function defaultIo(): Io {
  const stdout = watchStdout();
  return {
    stdout: (text) => stdout.send(text),
    stderr: (text) => process.stderr.write(text),
    write: (data) => stdout.write(data),
    closed: stdout.closed,
    terminal: Boolean(process.stdout.isTTY),
    stderrTerminal: Boolean(process.stderr.isTTY),
    rows: () => process.stdout.rows,
    color:
      Boolean(process.stdout.isTTY) && !('NO_COLOR' in process.env) && process.env.TERM !== 'dumb',
    env: process.env,
    cwd: process.cwd(),
  };
}

/** The colour of each state, and of `waiting` (a pending job yonder holds back for its parents). */
const CODES: Record<JobState | 'waiting', number> = {
  submitting: 34,
  pending: 34,
  waiting: 34,
  running: 36,
  succeeded: 32,
  failed: 31,
  cancelled: 33,
  unknown: 35,
};

export function paintState(io: Io, state: JobState | 'waiting'): string {
  return io.color ? `\u001b[${CODES[state]}m${state}\u001b[0m` : state;
}

/**
 * The warning for a target whose jobs could not be polled: the profiles the user named first,
 * then how many jobs, the target (yonder's key for it) and the error.
 */
export function unreachableText(failure: {
  target: string;
  profiles: readonly string[];
  jobs: readonly string[];
  error: { code: string; message: string };
  since?: string;
}): string {
  const { target, profiles, jobs, error } = failure;
  const named = profiles.map((profile) => JSON.stringify(profile)).join(', ');
  return escapeControlCharacters(
    `yonder: warning: cannot poll profile${profiles.length > 1 ? 's' : ''} ${named} (${jobs.length} job${jobs.length > 1 ? 's' : ''}) at ${target}${failure.since ? ` since ${failure.since}` : ''}: ${error.code}: ${error.message}`,
  );
}

/** One warning per target whose jobs could not be polled (stderr): its profiles, its jobs, the error. */
export function warnUnreachable(
  io: Io,
  targets: ReadonlyArray<{
    target: string;
    profiles: string[];
    jobs: string[];
    error: { code: string; message: string };
  }>,
): void {
  for (const failure of targets) io.stderr(`${unreachableText(failure)}\n`);
}

/** The one JSON document a `--json` command prints. */
export function envelope(result: unknown): string {
  return `${JSON.stringify({ ok: true, result })}\n`;
}

/**
 * The JSON document of a failed `--json` command: the error's code and message, and for invalid
 * input each issue as `{ path, message }` (path: the field, dotted) for a program to show beside
 * its field.
 */
export function errorEnvelope(
  code: string,
  message: string,
  issues?: ReadonlyArray<{ path: string; message: string }>,
): string {
  const error = issues
    ? { code, message, issues: issues.map(({ path, message }) => ({ path, message })) }
    : { code, message };
  return `${JSON.stringify({ ok: false, error })}\n`;
}

/** A job for JSON output: the ledger record without internal bookkeeping (nor the kept log tail). */
export function jobJson(job: JobRecord): Record<string, unknown> {
  return listedJob(job);
}

/** Milliseconds as people read a job's run time: `850ms`, `12.3s`, `4m 05s`, `2h 03m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600)
    return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h ${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;
}

/** A job in full, for `yonder status`; control characters in any value are shown escaped. */
export function jobDetails(
  io: Io,
  job: JobRecord,
  parents: ReadonlyMap<string, JobRecord | null> = new Map(),
): string {
  const lines: string[] = [];
  const add = (label: string, value: string | number | null | undefined): void => {
    if (value !== null && value !== undefined && value !== '')
      lines.push(`${`${label}:`.padEnd(14)}${escapeControlCharacters(String(value))}`);
  };
  add('Job', job.id);
  add('Name', job.name);
  add('Profile', `${job.profile} (${job.backend})`);
  lines.push(
    `${'State:'.padEnd(14)}${paintState(io, job.state)}${job.nativeState ? ` (${escapeControlCharacters(job.nativeState)})` : ''}`,
  );
  add('Exit code', job.exitCode);
  add('Signal', job.signal);
  add('Reason', job.reason);
  add('Failure', job.failureKind);
  add('External id', job.externalId);
  // What it waits (or waited) for, as --after takes it back, with each parent's state when known.
  add(
    'After',
    (job.after ?? [])
      .map((parent) => {
        const record = parents.get(parent.job);
        const state = record === undefined ? '' : ` (${record ? record.state : 'gone'})`;
        return `${parent.job}:${parent.when}${state}`;
      })
      .join(', '),
  );
  add('Command', job.spec.argv.map((word) => JSON.stringify(word)).join(' '));
  add('Cwd', job.spec.cwd);
  // Names only: values may be long, and the ledger's `--json` has them.
  add('Env', Object.keys(job.spec.env ?? {}).join(' '));
  add('Secrets', (job.spec.secretNames ?? []).join(' '));
  add(
    'Resources',
    Object.entries(job.spec.resources ?? {})
      .map(([key, value]) => `${key}=${value}`)
      .join(' '),
  );
  add(
    'Sched. opts',
    (job.spec.schedulerOptions ?? []).map((word) => JSON.stringify(word)).join(' '),
  );
  add('Job dir', typeof job.data?.jobDir === 'string' ? job.data.jobDir : null);
  add('Log', typeof job.data?.log === 'string' ? job.data.log : null);
  add('Container', containerLine(job));
  add('Created', job.createdAt);
  add('Started', job.startedAt);
  add('Finished', job.finishedAt);
  if (job.startedAt && job.finishedAt)
    add('Duration', formatDuration(Date.parse(job.finishedAt) - Date.parse(job.startedAt)));
  if (job.cancel) add('Cancel', `requested ${job.cancel.requestedAt} (${job.cancel.reason})`);
  if (job.error) add('Last error', `${job.error.code}: ${job.error.message}`);
  lines.push('History:');
  for (const step of job.history) {
    lines.push(
      escapeControlCharacters(
        `  ${step.at}  ${step.from ?? '-'} -> ${step.to}  [${step.source}${step.nativeState ? `: ${step.nativeState}` : ''}]${step.reason ? ` ${step.reason}` : ''}`,
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}
