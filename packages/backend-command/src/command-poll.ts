/** Poll through a command profile: the status template (batched or per job), then the wrappers' files for jobs it does not list as live. */
import {
  type BackendContextV1,
  type BackendJobV1,
  type FoundObservationV1,
  type JobState,
  type ObservationV1,
  type RunResultV1,
  toYonderError,
} from '@yonder/core';
import { exitObservation, normaliseState } from '@yonder/core/backend-kit';
import type { CommandOptions } from './command-options.js';
import {
  BATCH,
  commandFailure,
  jobValues,
  parsedTemplates,
  renderCommand,
  runCommand,
} from './command-templates.js';
import { parseStatus, type StatusLine } from './parse-status.js';

const TERMINAL: ReadonlySet<JobState> = new Set(['succeeded', 'failed', 'cancelled']);

/** A status call that failed, or whose answer does not count. */
interface Failure {
  readonly error: { readonly code: string; readonly message: string };
}

/** What a status call said about one job: its line, if any, and whether the answer was empty. */
interface Listing {
  readonly line: StatusLine | undefined;
  /** The call printed no status line at all (for any job). */
  readonly empty: boolean;
  readonly perJob: boolean;
}

/** What the job's wrapper left in its directory. */
interface WrapperFiles {
  readonly started: boolean;
  readonly exitCode: number | null;
}

/**
 * Print `FILES <i> <started 0|1> <exit code or ->` for each job directory ($1…, 0-based): whether
 * its wrapper started (`wrapper.pid`) and the exit status it recorded (`exit-code`).
 */
const WRAPPER_FILES_SCRIPT = `i=0
for d in "$@"; do
  s=0; if [ -f "$d/wrapper.pid" ]; then s=1; fi
  e=-
  if [ -f "$d/exit-code" ]; then
    e=$(cat -- "$d/exit-code" 2>/dev/null)
    case $e in ''|*[!0-9]*) e=- ;; esac
  fi
  printf 'FILES %s %s %s\\n' "$i" "$s" "$e"
  i=$((i + 1))
done
`;

/**
 * Whether a status call answered: exit status 0 and no error on stderr (schedulers' tools,
 * Slurm's sacct among them, can print an error and still exit 0).
 */
function answered(result: RunResultV1): boolean {
  return (
    result.exitCode === 0 &&
    !/\berror\b|Problem talking to the database|Socket timed out|Unable to contact/i.test(
      result.stderr,
    )
  );
}

function statusFailure(result: RunResultV1): Failure {
  return {
    error: {
      code: 'E_SCHEDULER_UNAVAILABLE',
      message: `status command: ${commandFailure(result)}`,
    },
  };
}

/** A status line as an observation: the profile's own `states` first, then the shared table. */
function stateOf(line: StatusLine, opts: CommandOptions): FoundObservationV1 {
  const extra = opts.states;
  const mapped = extra
    ? Object.entries(extra).find(([word]) => word.toLowerCase() === line.state.toLowerCase())?.[1]
    : undefined;
  const normalised = mapped
    ? {
        state: mapped,
        failureKind: mapped === 'failed' ? ('application' as const) : null,
        reason: null,
        exitCode: null,
      }
    : normaliseState(line.state);
  return {
    kind: 'found',
    state: normalised.state,
    nativeState: line.state,
    exitCode: line.exitCode ?? normalised.exitCode,
    reason: line.reason ?? normalised.reason,
    failureKind: normalised.failureKind,
    source: 'status',
  };
}

/**
 * Observe the jobs (all on one target): one status call per batch with `{external_ids}`, else
 * one per job; then, in one more round trip, the wrappers' files of the jobs it listed as
 * finished or did not list. An exit code settles a job; a status call that failed or printed an
 * error is a failed query; so is an empty answer for a job that started or was running (the
 * scheduler cannot have forgotten it: its status command is sick). A job neither listed nor
 * settled is absent.
 */
export async function commandPoll(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1<CommandOptions>,
): Promise<Map<string, ObservationV1>> {
  const out = new Map<string, ObservationV1>();
  if (jobs.length === 0) return out;
  const live = jobs.filter((job) => job.externalId !== null);
  const listings = await listJobs(live, context);
  const settle: BackendJobV1[] = [];
  for (const job of live) {
    const listing = listings.get(job.id) as Listing | Failure;
    if ('error' in listing) {
      out.set(job.id, { kind: 'query-failed', source: 'status', error: listing.error });
      continue;
    }
    const found = listing.line ? stateOf(listing.line, context.options) : undefined;
    if (found && !TERMINAL.has(found.state)) out.set(job.id, found);
    else settle.push(job);
  }
  const files = await readWrapperFiles(settle, context);
  for (const job of settle)
    out.set(
      job.id,
      settled(
        job,
        listings.get(job.id) as Listing,
        files.get(job.id) as WrapperFiles | Failure,
        context.options,
      ),
    );
  return out;
}

/** Each job's listing by the status command, or why there is none. */
async function listJobs(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1<CommandOptions>,
): Promise<Map<string, Listing | Failure>> {
  const out = new Map<string, Listing | Failure>();
  const template = parsedTemplates(context.options).status;
  const call = (job: BackendJobV1, ids: readonly string[]) =>
    runCommand(
      context,
      'options.status',
      renderCommand(template, jobValues(job), ids, 'options.status'),
    ).catch((error: unknown): Failure => ({ error: toYonderError(error, 'E_TRANSPORT').toJSON() }));
  if (template.placeholders.has('external_ids')) {
    for (let index = 0; index < jobs.length; index += BATCH) {
      const chunk = jobs.slice(index, index + BATCH);
      const result = await call(
        chunk[0] as BackendJobV1,
        chunk.map((job) => job.externalId as string),
      );
      const failure = 'error' in result ? result : answered(result) ? null : statusFailure(result);
      const lines = new Map<string, StatusLine>();
      const parsed = failure || 'error' in result ? [] : parseStatus(result.stdout, true);
      for (const line of parsed) if (line.id !== null) lines.set(line.id, line);
      for (const job of chunk)
        out.set(
          job.id,
          failure ?? {
            line: lines.get(job.externalId as string),
            empty: parsed.length === 0,
            perJob: false,
          },
        );
    }
    return out;
  }
  await Promise.all(
    jobs.map(async (job) => {
      const result = await call(job, []);
      if ('error' in result) out.set(job.id, result);
      else if (!answered(result)) out.set(job.id, statusFailure(result));
      else {
        const line = parseStatus(result.stdout, false, job.externalId as string)[0];
        out.set(job.id, { line, empty: line === undefined, perJob: true });
      }
    }),
  );
  return out;
}

/** The wrappers' files of the jobs, in one remote command (a failure for each if it fails). */
async function readWrapperFiles(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1,
): Promise<Map<string, WrapperFiles | Failure>> {
  const out = new Map<string, WrapperFiles | Failure>();
  if (jobs.length === 0) return out;
  const result = await context.transport
    .runScript(
      WRAPPER_FILES_SCRIPT,
      jobs.map((job) => String(job.data.jobDir)),
      { timeoutMs: 60_000 },
    )
    .catch((error: unknown): Failure => ({ error: toYonderError(error, 'E_TRANSPORT').toJSON() }));
  const found = new Map<number, WrapperFiles>();
  if (!('error' in result))
    for (const match of result.stdout.matchAll(/^FILES (\d+) ([01]) (\d+|-)$/gm))
      found.set(Number(match[1]), {
        started: match[2] === '1',
        exitCode: match[3] === '-' ? null : Number(match[3]),
      });
  jobs.forEach((job, index) => {
    out.set(
      job.id,
      found.get(index) ??
        ('error' in result
          ? result
          : {
              error: {
                code: 'E_TRANSPORT',
                message: `the job directory could not be read: ${commandFailure(result)}`,
              },
            }),
    );
  });
  return out;
}

/** A job the status command listed as finished or did not list, settled with its wrapper's files. */
function settled(
  job: BackendJobV1,
  listing: Listing,
  files: WrapperFiles | Failure,
  options: CommandOptions,
): ObservationV1 {
  const found = listing.line ? stateOf(listing.line, options) : undefined;
  if (!('error' in files) && files.exitCode !== null) {
    const code = files.exitCode;
    const exact = exitObservation(code, 'exit-code-file') as FoundObservationV1;
    // The scheduler knows better why a job it stopped ended; the file has the exact code.
    if (
      found &&
      (found.state === 'cancelled' ||
        found.failureKind === 'infrastructure' ||
        found.reason === 'timeout')
    )
      return { ...found, exitCode: code, signal: exact.signal ?? null };
    return { ...exact, nativeState: found ? found.nativeState : exact.nativeState };
  }
  if (found) return found;
  if ('error' in files)
    return { kind: 'query-failed', source: 'job-directory', error: files.error };
  if (listing.empty && (files.started || job.state === 'running')) {
    return {
      kind: 'query-failed',
      source: 'status',
      error: {
        code: 'E_SCHEDULER_UNAVAILABLE',
        message: `the status command printed nothing, though job ${job.externalId} ${files.started ? 'started' : 'was running'} and has recorded no end: an implausible answer, taken as a failed query`,
      },
    };
  }
  return {
    kind: 'absent',
    source: 'status',
    detail: listing.perJob
      ? 'the status command printed nothing'
      : 'the status command did not list the job',
  };
}
