/** `yonder submit --batch FILE|-`: one job per JSON line, checked line by line, submitted through core's submitMany, one id per submitted job out. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  type JobRecord,
  type JobSpec,
  type JsonObject,
  RESOURCE_NAMES,
  ValidationError,
  type ValidationIssue,
} from '@yonder/core';
import {
  MAX_SETTINGS_BYTES,
  parseJson,
  readInputFile,
  utf8Text,
  validateJobSpec,
} from '@yonder/core/backend-kit';
import type { CommandContext } from '../../command.js';
import { envelope, type Io } from '../../output.js';
import { UsageError } from '../../usage-error.js';

/** The largest batch read: many jobs, each with settings of their own. */
const MAX_BATCH_BYTES = 64 * 1024 * 1024;
const FIELDS = new Set<string>([
  'argv',
  'name',
  'env',
  'settings',
  'resources',
  'schedulerOptions',
  'cwd',
  'after',
  ...RESOURCE_NAMES,
]);

interface BatchOptions {
  profile: string;
  json: boolean;
  io: Io;
  runtime: CommandContext['runtime'];
}

function readBatch(file: string, cwd: string): string {
  try {
    if (file === '-') return utf8Text(readFileSync(0), 'the batch on stdin');
    return readInputFile(resolve(cwd, file), MAX_BATCH_BYTES);
  } catch (error) {
    throw new UsageError(`--batch: ${(error as Error).message}`);
  }
}

/** One line as a spec on top of the command line's (its defaults); issues as `line N: field`. */
function lineSpec(
  text: string,
  line: number,
  base: JobSpec,
): { spec?: JobSpec; issues: ValidationIssue[] } {
  const where = `line ${line}`;
  if (Buffer.byteLength(text) > MAX_SETTINGS_BYTES + 64 * 1024)
    return { issues: [{ path: where, message: 'is too long (at most 1 MiB of settings a job)' }] };
  const parsed = parseJson(text);
  if (!parsed.ok)
    return {
      issues: parsed.issues.map((issue) => ({
        path: issue.path ? `${where}: ${issue.path}` : where,
        message: issue.message,
      })),
    };
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return {
      issues: [{ path: where, message: 'must be a JSON object such as {"argv": ["echo", "hi"]}' }],
    };
  const fields = value as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !FIELDS.has(key));
  if (unknown.length > 0)
    return {
      issues: [
        {
          path: where,
          message: `unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((key) => JSON.stringify(key)).join(', ')}; use ${[...FIELDS].join(', ')}`,
        },
      ],
    };
  const flat = Object.fromEntries(
    RESOURCE_NAMES.filter((key) => key in fields).map((key) => [key, fields[key]]),
  );
  const spec = {
    ...base,
    argv: fields.argv,
    env: { ...base.env, ...(fields.env as object) },
    resources: { ...base.resources, ...(fields.resources as object), ...flat },
    ...(fields.schedulerOptions === undefined ? {} : { schedulerOptions: fields.schedulerOptions }),
    ...(fields.name === undefined ? {} : { name: fields.name }),
    ...(fields.cwd === undefined ? {} : { cwd: fields.cwd }),
    ...(fields.settings === undefined ? {} : { settings: fields.settings as JsonObject }),
    ...(fields.after === undefined ? {} : { after: fields.after }),
  } as JobSpec;
  const issues = validateJobSpec(spec).map((issue) => ({
    path: `${where}: ${issue.path}`,
    message: issue.message,
  }));
  return issues.length > 0 ? { issues } : { spec, issues };
}

/**
 * Submit every line of the batch, in order, through one profile. Nothing is submitted when a
 * line is not a valid job (every bad line is named); a job that was not submitted (or whose
 * submit got no answer) is named by its line on stderr, with why, and its id is not printed;
 * the others are submitted. Exit 1 when any was not.
 */
export async function submitBatch(
  file: string,
  base: JobSpec,
  { profile, json, io, runtime }: BatchOptions,
): Promise<number> {
  const lines: number[] = [];
  const specs: JobSpec[] = [];
  const issues: ValidationIssue[] = [];
  readBatch(file, io.cwd)
    .split('\n')
    .forEach((text, index) => {
      if (text.trim() === '') return;
      const { spec, issues: found } = lineSpec(text.replace(/\r$/, ''), index + 1, base);
      issues.push(...found);
      if (spec) {
        lines.push(index + 1);
        specs.push(spec);
      }
    });
  if (issues.length > 0)
    throw new ValidationError(
      'E_INVALID_JOB_SPEC',
      'The batch was not submitted (no job of it was)',
      issues,
    );
  if (specs.length === 0)
    throw new UsageError(`--batch: ${file} holds no job (one JSON object a line).`);
  let jobs: JobRecord[];
  // Ctrl-C stops sending: the jobs sent are printed, the others leave no record.
  const interrupted = new AbortController();
  const stop = (): void => interrupted.abort();
  process.once('SIGINT', stop);
  try {
    jobs = await runtime().manager.submitMany(specs, {
      profile,
      // "#N" in a line's `after` is the job of line N.
      numbers: lines,
      signal: interrupted.signal,
      onWarning: (message, index) =>
        io.stderr(`yonder: warning: line ${lines[index]}: ${message}\n`),
    });
  } catch (error) {
    // Core names a job by its index in the batch; the user knows it by its line.
    if (ValidationError.isInstance(error))
      throw new ValidationError(
        error.code,
        'The batch was not submitted (no job of it was)',
        error.issues.map((issue) => ({
          path: issue.path.replace(
            /^jobs\.(\d+)\.?/,
            (_m, n: string) => `line ${lines[Number(n)]}: `,
          ),
          message: issue.message,
        })),
      );
    throw error;
  } finally {
    process.removeListener('SIGINT', stop);
  }
  // A job is submitted unless it failed at submit, or its submit got no answer (it stays
  // `submitting` with the error, and the next refresh looks for it on the target).
  const unsubmitted = jobs.flatMap((job, index) =>
    (job.state === 'failed' || job.state === 'submitting') && job.error
      ? [{ line: lines[index] as number, job }]
      : [],
  );
  if (json) {
    io.stdout(
      envelope(
        jobs.map((job, index) => ({
          line: lines[index],
          id: job.id,
          state: job.state,
          error:
            job.error && (job.state === 'failed' || job.state === 'submitting') ? job.error : null,
        })),
      ),
    );
  } else {
    const skipped = new Set(unsubmitted.map(({ job }) => job.id));
    io.stdout(
      jobs
        .filter((job) => !skipped.has(job.id))
        .map((job) => `${job.id}\n`)
        .join(''),
    );
    for (const { line, job } of unsubmitted)
      io.stderr(
        job.state === 'failed'
          ? `yonder: line ${line}: job ${job.id} was not submitted: ${job.error?.message}\n`
          : `yonder: line ${line}: job ${job.id} may not have been submitted (${job.error?.message}); the next status or list looks for it on the target\n`,
      );
  }
  if (jobs.length < specs.length) {
    const first = lines[jobs.length] as number;
    io.stderr(
      `yonder: interrupted: ${jobs.length} of ${specs.length} jobs were submitted${jobs.length > 0 ? (json ? ' (listed above)' : ' (their ids are above)') : ''}; the other ${specs.length - jobs.length}, from line ${first} on, were not sent and left no record.\n`,
    );
    return 130;
  }
  return unsubmitted.length > 0 ? 1 : 0;
}
