import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { JobSpec, JsonObject, Resources } from '@yonder/core';
import { getErrorMessage } from '@yonder/core';
import { integerOption, pairs, parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, jobJson } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder submit [options] -- COMMAND [ARG...]

Submit COMMAND (run without a shell) and print the new job's id.

  --profile P            profile to submit through (default: $YONDER_PROFILE, else "local")
  --name N               job name (default: the program's name)
  --settings FILE        JSON object written next to the job; "{settings}" in ARGs becomes its path
  --env K=V              environment variable for the job (repeatable)
  --secret NAME          pass $NAME from this environment as a secret: never in argv, logs or the ledger
  --secrets-file FILE    KEY=VALUE lines to pass as secrets
  --time T --cpus N --memory M --gpus N --nodes N --partition P --account A --qos Q
                         resources, for backends that honour them
  --scheduler-option ARG extra scheduler argument, passed as one word (repeatable)
  --cwd DIR              directory the job runs in on the target
  --json                 print the job as JSON
`;

function readSettings(path: string, cwd: string): JsonObject {
  const full = resolve(cwd, path);
  let text: string;
  try {
    text = readFileSync(full, 'utf8');
  } catch (error) {
    throw new UsageError(`--settings: cannot read ${full}: ${getErrorMessage(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--settings: ${full} is not valid JSON: ${getErrorMessage(error)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`--settings: ${full} must hold a JSON object.`);
  }
  return value as JsonObject;
}

function readSecretsFile(path: string, cwd: string): Record<string, string> {
  const full = resolve(cwd, path);
  let text: string;
  try {
    text = readFileSync(full, 'utf8');
  } catch (error) {
    throw new UsageError(`--secrets-file: cannot read ${full}: ${getErrorMessage(error)}`);
  }
  const out: Record<string, string> = {};
  text.split('\n').forEach((line, index) => {
    if (!line.trim() || line.trimStart().startsWith('#')) return;
    const at = line.indexOf('=');
    if (at <= 0)
      throw new UsageError(`--secrets-file: line ${index + 1} of ${full} is not KEY=VALUE.`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).replace(/\r$/, '');
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
      time: { type: 'string' },
      cpus: { type: 'string' },
      memory: { type: 'string' },
      gpus: { type: 'string' },
      nodes: { type: 'string' },
      partition: { type: 'string' },
      account: { type: 'string' },
      qos: { type: 'string' },
      'scheduler-option': { type: 'string', multiple: true },
      cwd: { type: 'string' },
      json: { type: 'boolean' },
    },
    'submit',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (rest === null) {
    throw new UsageError(
      positionals.length > 0
        ? `Put the command after "--": yonder submit [options] -- ${positionals.join(' ')}`
        : 'No command given: yonder submit [options] -- COMMAND [ARG...]',
    );
  }
  if (positionals.length > 0)
    throw new UsageError(`Unexpected argument "${positionals[0]}" before "--".`);
  if (rest.length === 0) throw new UsageError('No command given after "--".');

  const secrets: Record<string, string> = values['secrets-file']
    ? readSecretsFile(String(values['secrets-file']), io.cwd)
    : {};
  for (const name of (values.secret as string[] | undefined) ?? []) {
    const value = io.env[name];
    if (value === undefined)
      throw new UsageError(`--secret ${name}: the environment variable ${name} is not set.`);
    secrets[name] = value;
  }
  const resources: Resources = {};
  if (values.time !== undefined) resources.time = String(values.time);
  if (values.memory !== undefined) resources.memory = String(values.memory);
  const cpus = integerOption(values.cpus, 'cpus', 1);
  if (cpus !== undefined) resources.cpus = cpus;
  const gpus = integerOption(values.gpus, 'gpus', 0);
  if (gpus !== undefined) resources.gpus = gpus;
  const nodes = integerOption(values.nodes, 'nodes', 1);
  if (nodes !== undefined) resources.nodes = nodes;
  for (const key of ['partition', 'account', 'qos'] as const) {
    if (values[key] !== undefined) resources[key] = String(values[key]);
  }
  const spec: JobSpec = {
    argv: rest,
    env: pairs(values.env, 'env'),
    secrets,
    resources,
    schedulerOptions: (values['scheduler-option'] as string[] | undefined) ?? [],
  };
  if (values.name !== undefined) spec.name = String(values.name);
  if (values.settings !== undefined) spec.settings = readSettings(String(values.settings), io.cwd);
  if (values.cwd !== undefined) spec.cwd = resolve(io.cwd, String(values.cwd));
  const profile =
    (values.profile as string | undefined) || io.env.YONDER_PROFILE?.trim() || 'local';
  const job = await runtime().manager.submit(spec, { profile });
  io.stdout(values.json ? envelope(jobJson(job)) : `${job.id}\n`);
  return 0;
};
