/** A command profile's templates: parsing them, filling them in for a job, and running the result through the transport. */
import { createHash } from 'node:crypto';
import {
  type BackendContextV1,
  type BackendJobV1,
  type RunResultV1,
  YonderError,
} from '@yonder/core';
import { type ParsedTemplate, parseTemplate, RUN_TRUSTED_PROGRAM } from '@yonder/core/backend-kit';
import { type CommandOptions, PLACEHOLDERS } from './command-options.js';

/** At most this many jobs in one status or cancel call with `{external_ids}`. */
export const BATCH = 200;

/** What a failed command said (the end of stderr, else of stdout), or its exit status. */
export function commandFailure(result: RunResultV1): string {
  return (
    (result.stderr.trim() || result.stdout.trim()).slice(-1200) ||
    `exit status ${result.exitCode ?? result.signal}`
  );
}

/**
 * Substitute a template: `{external_ids}` standing alone as a word becomes one argument per id;
 * inside a longer word the ids are joined with commas. Every other value stays inside its word.
 */
export function renderCommand(
  parsed: ParsedTemplate,
  values: Readonly<Record<string, string>>,
  ids: readonly string[] = [],
  label = 'template',
): string[] {
  const out: string[] = [];
  for (const word of parsed.words) {
    const only = word.length === 1 ? word[0] : undefined;
    if (only && 'name' in only && only.name === 'external_ids') {
      out.push(...ids);
      continue;
    }
    out.push(
      word
        .map((part) => {
          if ('literal' in part) return part.literal;
          if (part.name === 'external_ids') return ids.join(',');
          const value = values[part.name];
          if (value === undefined)
            throw new YonderError(
              'E_INVALID_TEMPLATE',
              `${label}: {${part.name}} has no value here.`,
            );
          return value;
        })
        .join(''),
    );
  }
  return out;
}

/** The profile's templates (its options, as the backend gets them), parsed. */
export function parsedTemplates(
  opts: CommandOptions,
): Record<'submit' | 'status' | 'cancel', ParsedTemplate> & { logs?: ParsedTemplate } {
  return {
    submit: parseTemplate(opts.submit, 'options.submit', PLACEHOLDERS),
    status: parseTemplate(opts.status, 'options.status', PLACEHOLDERS),
    cancel: parseTemplate(opts.cancel, 'options.cancel', PLACEHOLDERS),
    ...(opts.logs ? { logs: parseTemplate(opts.logs, 'options.logs', PLACEHOLDERS) } : {}),
  };
}

/** A submitted job's placeholder values. */
export function jobValues(job: BackendJobV1): Record<string, string> {
  const dir = String(job.data.jobDir ?? '');
  return {
    id: job.id,
    name: job.name,
    settings: `${dir}/settings.json`,
    script: `${dir}/job.sh`,
    workdir: dir,
    log: `${dir}/job.log`,
    profile: job.profile.name,
    external_id: job.externalId ?? '',
  };
}

/**
 * Run a rendered command through the transport, within the profile's time limit, its program
 * judged by the trust rule on the target first (RUN_TRUSTED_PROGRAM: refused, exit 23, naming
 * `field`, when another user could change it).
 */
export function runCommand(
  context: BackendContextV1<CommandOptions>,
  field: string,
  argv: readonly string[],
): Promise<RunResultV1> {
  return context.transport.runScript(RUN_TRUSTED_PROGRAM, [field, ...argv], {
    timeoutMs: (context.options.timeoutSeconds ?? 120) * 1000,
  });
}

/** A short key for a profile's commands: jobs are polled together only with the same commands. */
export function backendKey(opts: CommandOptions): string {
  return createHash('sha256')
    .update(JSON.stringify([opts.status, opts.cancel, opts.states ?? {}]))
    .digest('hex')
    .slice(0, 12);
}
