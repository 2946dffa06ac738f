/** `yonder submit`: read the job from the command line (and the files it names) and submit it. */
import { resolve } from 'node:path';
import type { JobSpec, JsonObject } from '@yonder/core';
import {
  ENV_NAME_PATTERN,
  isReservedKey,
  MAX_SECRETS_FILE_BYTES,
  MAX_SETTINGS_BYTES,
  parseJson,
  readInputFile,
} from '@yonder/core/backend-kit';
import { pairs, parse } from '../../args.js';
import type { Command } from '../../command.js';
import {
  CONTAINER_HELP,
  CONTAINER_OPTIONS,
  containerFromOptions,
} from '../../container-options.js';
import { checkFormat, formatJob } from '../../format-job.js';
import { envelope, jobJson } from '../../output.js';
import { RESOURCE_OPTIONS, readResources, readSchedulerOptions } from '../../resource-flags.js';
import { UsageError } from '../../usage-error.js';
import { submitBatch } from './submit-batch.js';

const HELP = `Usage: yonder submit [options] -- COMMAND [ARG...]
       yonder submit --batch FILE|- [options]

Submit COMMAND (run without a shell) and print the new job's id. Resources and scheduler
options the profile sets as defaults apply unless given here.

  --profile P            profile to submit through (default: $YONDER_PROFILE, else "local")
  --name N               job name (default: the program's name)
  --settings FILE        JSON object written next to the job; "{settings}" in ARGs becomes its path
                         (a regular file of at most 1 MiB, nested at most 64 deep)
  --env K=V              environment variable for the job (repeatable)
  --secret NAME          pass $NAME from this environment as a secret: never in argv, logs or the ledger
  --secrets-file FILE    KEY=VALUE lines to pass as secrets (a regular file of at most 64 KiB)
  --time T --cpus N --memory M --gpus N --nodes N --partition P --account A --qos Q
                         resources, for backends that honour them
  --scheduler-option ARG extra scheduler argument, passed as one word (repeatable)
  --cwd DIR              directory the job runs in on the target (in a container: inside it)
  --after JOB[:WHEN]     start only once job JOB (an id or a prefix of one, of any profile)
                         succeeded (WHEN ok, the default), failed or was cancelled (notok), ended
                         (any) or started (started); repeatable, all must hold. yonder holds the
                         job as "waiting" and submits it when a yonder command refreshes (wait,
                         list, status, ui); if a condition can no longer hold, the job fails with
                         reason dependency-never-satisfied. See docs/pipelines.md
${CONTAINER_HELP}  --no-container         run in no container, whatever the profile says
  --batch FILE|-         submit one job per line of FILE (or stdin): JSON objects with the fields
                         argv (required), name, env, settings, resources (or time, cpus, memory,
                         gpus, nodes, partition, account, qos), schedulerOptions, cwd, after (a list
                         of JOB[:WHEN], where #N is the job of line N); the options above are their
                         defaults; every line is in the ledger before any job is submitted. Prints
                         the id of each job submitted, in order; a job that was not is named by its
                         line on stderr, with why (exit 1). Ctrl-C stops sending: the ids sent are
                         printed, the jobs not sent leave no record, stderr says from which line on
                         (exit 130)
  --json                 print the job as JSON (with --batch: an array, one entry per line)
  --format TEMPLATE      print the job through a template, as yonder status does ('{id} {state}')
  -q, --quiet            print the id only (the default; for workflow engines that pass -q)
`;

/** Read a file an option names, as a usage error naming the option when it cannot be. */
function readOptionFile(option: string, path: string, maxBytes: number): string {
  try {
    return readInputFile(path, maxBytes);
  } catch (error) {
    throw new UsageError(`--${option}: ${(error as Error).message}`);
  }
}

/**
 * The `--settings` file: a regular file of at most 1 MiB holding one JSON object, nested at
 * most 64 deep, with no `__proto__`, `constructor` or `prototype` key (each refused by field).
 */
function readSettings(path: string, cwd: string): JsonObject {
  const full = resolve(cwd, path);
  const parsed = parseJson(readOptionFile('settings', full, MAX_SETTINGS_BYTES), {
    prefix: 'settings',
  });
  if (!parsed.ok) {
    const lines = parsed.issues.map((issue) => `${issue.path}: ${issue.message}`);
    throw new UsageError(`--settings: ${full}: ${lines.join('; ')}`);
  }
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`--settings: ${full} must hold a JSON object.`);
  }
  return value as JsonObject;
}

/**
 * The `--secrets-file`: KEY=VALUE lines (blank lines and # comments skipped), a regular file
 * of at most 64 KiB. A bad line is named by its number only: that line is usually a secret.
 */
function readSecretsFile(path: string, cwd: string): Record<string, string> {
  const full = resolve(cwd, path);
  const text = readOptionFile('secrets-file', full, MAX_SECRETS_FILE_BYTES);
  const out: Record<string, string> = {};
  text.split('\n').forEach((line, index) => {
    if (!line.trim() || line.trimStart().startsWith('#')) return;
    const at = line.indexOf('=');
    const name = at > 0 ? line.slice(0, at).trim() : '';
    const where = `line ${index + 1} of ${full}`;
    if (!ENV_NAME_PATTERN.test(name)) {
      throw new UsageError(
        `--secrets-file: ${where} is not NAME=VALUE with a variable name (letters, digits, "_") before "=".`,
      );
    }
    if (isReservedKey(name)) {
      throw new UsageError(`--secrets-file: ${where} uses a reserved name; use another.`);
    }
    out[name] = line.slice(at + 1).replace(/\r$/, '');
  });
  return out;
}

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals, rest } = parse(
    argv,
    {
      profile: { type: 'string' },
      name: { type: 'string' },
      settings: { type: 'string' },
      env: { type: 'string', multiple: true },
      secret: { type: 'string', multiple: true },
      'secrets-file': { type: 'string' },
      ...RESOURCE_OPTIONS,
      cwd: { type: 'string' },
      after: { type: 'string', multiple: true },
      batch: { type: 'string' },
      format: { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
      ...CONTAINER_OPTIONS,
      json: { type: 'boolean' },
    },
    'submit',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (values.batch !== undefined && rest !== null)
    throw new UsageError('--batch reads the commands from its file: give no command after "--".');
  if (rest === null && values.batch === undefined) {
    throw new UsageError(
      positionals.length > 0
        ? `Put the command after "--": yonder submit [options] -- ${positionals.join(' ')}`
        : 'No command given: yonder submit [options] -- COMMAND [ARG...]',
    );
  }
  if (positionals.length > 0)
    throw new UsageError(`Unexpected argument "${positionals[0]}" before "--".`);
  if (rest?.length === 0) throw new UsageError('No command given after "--".');

  const secrets: Record<string, string> = values['secrets-file']
    ? readSecretsFile(String(values['secrets-file']), io.cwd)
    : {};
  for (const name of (values.secret as string[] | undefined) ?? []) {
    if (isReservedKey(name) || !ENV_NAME_PATTERN.test(name))
      throw new UsageError(`--secret ${name}: not a variable name yonder passes.`);
    const value = Object.hasOwn(io.env, name) ? io.env[name] : undefined;
    if (value === undefined)
      throw new UsageError(`--secret ${name}: the environment variable ${name} is not set.`);
    secrets[name] = value;
  }
  // Taken: from here on the secret travels only into the job's 0600 file. Every process this
  // one starts (sbatch, a submit template, the local wrapper, ssh) inherits this environment,
  // and sbatch would hand it to Slurm, which saves a job's environment.
  for (const name of (values.secret as string[] | undefined) ?? []) {
    delete io.env[name];
    delete process.env[name];
  }
  const spec: JobSpec = {
    argv: rest ?? [],
    env: pairs(values.env, 'env'),
    secrets,
    resources: readResources(values),
    schedulerOptions: readSchedulerOptions(values),
  };
  if (values.name !== undefined) spec.name = String(values.name);
  if (values.settings !== undefined) spec.settings = readSettings(String(values.settings), io.cwd);
  if (values.cwd !== undefined) spec.cwd = resolve(io.cwd, String(values.cwd));
  if (values.after !== undefined) spec.after = values.after as string[];
  const container = containerFromOptions(values);
  if (container !== undefined) spec.container = container;
  const profile = profileOf(values.profile, io.env);
  const onWarning = (message: string) => io.stderr(`yonder: warning: ${message}\n`);
  if (values.batch !== undefined)
    return submitBatch(String(values.batch), spec, {
      profile,
      json: Boolean(values.json),
      io,
      runtime,
    });
  const format = values.format === undefined ? undefined : String(values.format);
  if (format !== undefined) checkFormat(format);
  const job = await runtime().manager.submit(spec, { profile, onWarning });
  if (format !== undefined) io.stdout(formatJob(format, job, io.color));
  else io.stdout(values.json ? envelope(jobJson(job)) : `${job.id}\n`);
  return 0;
};

/** The profile a submit goes through: --profile, else $YONDER_PROFILE, else local. */
export function profileOf(flag: unknown, env: NodeJS.ProcessEnv): string {
  return (flag as string | undefined) || env.YONDER_PROFILE?.trim() || 'local';
}
