import { createHash } from 'node:crypto';
import {
  type BackendContextV1,
  type BackendJobV1,
  type BackendV1,
  type CancelOutcomeV1,
  cachedProbe,
  checkTemplate,
  EXIT_CODES_SCRIPT,
  exitObservation,
  type FoundObservationV1,
  JOB_WRAPPER_SCRIPT,
  type JobState,
  type JsonObject,
  jobPayload,
  type LogChunkV1,
  normaliseState,
  type ObservationV1,
  outputBytes,
  type ParsedTemplate,
  PREPARE_JOB_DIRECTORY,
  type ProbeReportV1,
  type Profile,
  parseExitCodes,
  parseExternalId,
  parseTemplate,
  type RunResultV1,
  readRemoteLog,
  shJoin,
  shQuote,
  sliceLog,
  type ValidationIssue,
  withoutField,
  YonderError,
} from '@yonder/core';
import { type CommandOptions, CommandOptionsSchema, PLACEHOLDERS } from './command-options.js';
import { extractId, parseStatus, type StatusLine } from './parse-status.js';

export const COMMAND_BACKEND_ID = 'command';
const BATCH = 200;
/** The most a logs command may print: it prints the whole log every time it is read. */
const LOGS_COMMAND_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Prepare the job directory, write the job script, then run the submit command in the same
 * remote command. Arguments: $1 work directory (empty: $HOME/.yonder/command), $2 job id,
 * $3 payload lengths, $4 job script text, then the rendered submit command.
 */
const SUBMIT_SCRIPT = `set -u
w=$1; id=$2; lengths=$3; script=$4; shift 4
fallback="$HOME/.yonder/command"
${PREPARE_JOB_DIRECTORY}
printf '%s' "$script" > "$d/job.sh"
chmod 700 "$d/job.sh"
: > "$d/job.log"
printf 'DIR %s\\n' "$d"
"$@"
rc=$?
if [ "$rc" -ne 0 ]; then rm -rf -- "$d"; fi
exit "$rc"
`;

function options(profile: Profile): CommandOptions {
  return (profile.options ?? {}) as CommandOptions;
}

function failure(result: RunResultV1): string {
  return (
    (result.stderr.trim() || result.stdout.trim()).slice(-1200) ||
    `exit status ${result.exitCode ?? result.signal}`
  );
}

const TERMINAL: ReadonlySet<JobState> = new Set(['succeeded', 'failed', 'cancelled']);

/** The job script the scheduler runs: output to the job's log, then yonder's wrapper with the argv. */
export function jobScript(jobDir: string, cwd: string, argv: readonly string[]): string {
  return [
    '#!/bin/sh',
    `exec >> ${shQuote(`${jobDir}/job.log`)} 2>&1`,
    `cd -- ${shQuote(cwd)} || exit 1`,
    `exec ${shJoin(['sh', '-c', JOB_WRAPPER_SCRIPT, 'yonder-job', jobDir, ...argv])}`,
    '',
  ].join('\n');
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

function parsedTemplates(
  profile: Profile,
): Record<'submit' | 'status' | 'cancel', ParsedTemplate> & { logs?: ParsedTemplate } {
  const opts = options(profile);
  return {
    submit: parseTemplate(opts.submit, 'options.submit', PLACEHOLDERS),
    status: parseTemplate(opts.status, 'options.status', PLACEHOLDERS),
    cancel: parseTemplate(opts.cancel, 'options.cancel', PLACEHOLDERS),
    ...(opts.logs ? { logs: parseTemplate(opts.logs, 'options.logs', PLACEHOLDERS) } : {}),
  };
}

function jobValues(job: BackendJobV1): Record<string, string> {
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

function stateOf(line: StatusLine, profile: Profile, source: string): FoundObservationV1 {
  const extra = options(profile).states;
  const mapped = extra
    ? Object.entries(extra).find(([word]) => word.toLowerCase() === line.state.toLowerCase())?.[1]
    : undefined;
  const normalised = mapped
    ? {
        state: mapped as JobState,
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
    source,
  };
}

/**
 * The command backend: any scheduler, through the profile's submit, status, cancel and
 * (optionally) logs command templates, run through the profile's transport. yonder writes the
 * job script, so exit codes are known even when the scheduler never reports them.
 */
export function createCommandBackend(): BackendV1 {
  const probe = (
    profile: Profile,
    context: BackendContextV1,
    fresh: boolean,
  ): Promise<ProbeReportV1> =>
    cachedProbe(
      context.stateDirectory,
      `command|${context.transport.target}|${backendKey(profile)}`,
      3_600_000,
      fresh,
      async (): Promise<ProbeReportV1> => {
        const programs = Object.values(parsedTemplates(profile)).map((template) => {
          const first = template.words[0]?.[0];
          return first && 'literal' in first ? first.literal : '';
        });
        const result = await context.transport.runScript(
          'printf "%s\\n" "$HOME"; for p in "$@"; do if command -v "$p" >/dev/null 2>&1; then echo "ok $p"; else echo "missing $p"; fi; done',
          programs,
          { timeoutMs: 60_000 },
        );
        if (result.exitCode !== 0)
          return {
            ok: false,
            facts: {},
            problems: [`the target did not answer: ${failure(result)}`],
          };
        const [home = '', ...rest] = result.stdout.split('\n');
        const missing = rest
          .filter((line) => line.startsWith('missing '))
          .map((line) => line.slice(8));
        const problems = missing.map(
          (program) => `the program "${program}" is not found on the target`,
        );
        if (!home.startsWith('/') && !profile.workdir)
          problems.push('the remote $HOME is not an absolute path: set a workdir (--workdir)');
        return {
          ok: problems.length === 0,
          facts: { transport: context.transport.target, home, programs: programs.filter(Boolean) },
          problems,
        };
      },
    );

  const run = (
    context: BackendContextV1,
    profile: Profile,
    argv: readonly string[],
    input?: string,
  ): Promise<RunResultV1> =>
    context.transport.run(argv, {
      timeoutMs: (options(profile).timeoutSeconds ?? 120) * 1000,
      ...(input === undefined ? {} : { input }),
    });

  const backend: BackendV1 = {
    specificationVersion: 'v1',
    id: COMMAND_BACKEND_ID,
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'optional',
      recoverSubmit: false,
      logs: true,
      // Queues and their accounting lag: a job out of view gets a minute before it is called lost.
      absentGraceSeconds: 60,
      transport: 'ssh',
    },
    optionsSchema: CommandOptionsSchema,

    validateProfile(profile) {
      const opts = options(profile);
      const issues: ValidationIssue[] = [];
      const check = (field: 'submit' | 'status' | 'cancel' | 'logs', needs: string[][]): void => {
        const text = opts[field];
        if (text === undefined) return;
        const { issues: found, parsed } = checkTemplate(text, `options.${field}`, PLACEHOLDERS);
        issues.push(...found);
        if (parsed) {
          for (const group of needs) {
            if (!group.some((name) => parsed.placeholders.has(name))) {
              issues.push({
                path: `options.${field}`,
                message: `must use ${group.map((name) => `{${name}}`).join(' or ')}`,
              });
            }
          }
        }
      };
      check('submit', [['script', 'settings']]);
      check('status', [['external_id', 'external_ids']]);
      check('cancel', [['external_id', 'external_ids']]);
      check('logs', [['external_id', 'log']]);
      if (opts.idPattern !== undefined) {
        try {
          new RegExp(opts.idPattern);
        } catch (error) {
          issues.push({
            path: 'options.idPattern',
            message: `is not a valid regular expression: ${(error as Error).message}`,
          });
        }
      }
      return issues;
    },

    targetKey(profile) {
      return `command:${profile.host ?? 'local'}:${backendKey(profile)}`;
    },

    probe: (profile, context) => probe(profile, context, true),

    async submit(request, context) {
      const report = await probe(request.profile, context, false);
      if (!report.ok)
        throw new YonderError(
          'E_SUBMIT_FAILED',
          `The target cannot run this profile's commands: ${report.problems.join('; ')}`,
        );
      const templates = parsedTemplates(request.profile);
      const workdir = request.profile.workdir ?? `${String(report.facts.home)}/.yonder/command`;
      const jobDir = `${workdir}/${request.id}`;
      const settingsPath = `${jobDir}/settings.json`;
      const argv =
        request.settingsText === undefined
          ? [...request.argv]
          : request.argv.map((word) => word.split('{settings}').join(settingsPath));
      const settingsText =
        request.settingsText ??
        (templates.submit.placeholders.has('settings') ? '{}\n' : undefined);
      const { input, lengths } = jobPayload(
        { ...request.env, YONDER_JOB_ID: request.id, YONDER_JOB_NAME: request.name },
        request.secrets,
        settingsText,
      );
      const values = {
        id: request.id,
        name: request.name,
        settings: settingsPath,
        script: `${jobDir}/job.sh`,
        workdir: jobDir,
        log: `${jobDir}/job.log`,
        profile: request.profile.name,
      };
      const command = renderCommand(templates.submit, values, [], 'options.submit');
      const result = await context.transport.runScript(
        SUBMIT_SCRIPT,
        [workdir, request.id, lengths, jobScript(jobDir, request.cwd ?? jobDir, argv), ...command],
        { input, timeoutMs: (options(request.profile).timeoutSeconds ?? 120) * 1000 },
      );
      if (result.exitCode !== 0)
        throw new YonderError('E_SUBMIT_FAILED', `The submit command failed: ${failure(result)}`);
      const output = withoutField(result.stdout, 'DIR');
      const raw = extractId(output, options(request.profile).idPattern);
      if (!raw) {
        throw new YonderError(
          'E_SUBMIT_FAILED',
          `The submit command printed no job id${options(request.profile).idPattern ? ' matching options.idPattern' : ''}: ${JSON.stringify(output.slice(0, 300))}`,
        );
      }
      const externalId = parseExternalId(raw).id;
      const data: JsonObject = { jobDir, log: `${jobDir}/job.log` };
      return { externalId, state: 'pending', nativeState: 'submitted', data };
    },

    async poll(jobs, context) {
      const out = new Map<string, ObservationV1>();
      const first = jobs[0];
      if (!first) return out;
      const profile = first.profile;
      const templates = parsedTemplates(profile);
      const live = jobs.filter((job) => job.externalId !== null);
      if (templates.status.placeholders.has('external_ids')) {
        for (let index = 0; index < live.length; index += BATCH) {
          const chunk = live.slice(index, index + BATCH);
          const ids = chunk.map((job) => job.externalId as string);
          const command = renderCommand(
            templates.status,
            jobValues(chunk[0] as BackendJobV1),
            ids,
            'options.status',
          );
          const result = await run(context, profile, command);
          if (result.exitCode !== 0) {
            for (const job of chunk)
              out.set(job.id, {
                kind: 'query-failed',
                source: 'status',
                error: {
                  code: 'E_SCHEDULER_UNAVAILABLE',
                  message: `status command: ${failure(result)}`,
                },
              });
            continue;
          }
          const lines = new Map<string, StatusLine>();
          for (const line of parseStatus(result.stdout, true))
            if (line.id !== null) lines.set(line.id, line);
          for (const job of chunk) {
            const line = lines.get(job.externalId as string);
            out.set(
              job.id,
              line
                ? stateOf(line, profile, 'status')
                : {
                    kind: 'absent',
                    source: 'status',
                    detail: 'the status command did not list the job',
                  },
            );
          }
        }
      } else {
        await Promise.all(
          live.map(async (job) => {
            const command = renderCommand(templates.status, jobValues(job), [], 'options.status');
            const result = await run(context, profile, command);
            if (result.exitCode !== 0) {
              out.set(job.id, {
                kind: 'query-failed',
                source: 'status',
                error: {
                  code: 'E_SCHEDULER_UNAVAILABLE',
                  message: `status command: ${failure(result)}`,
                },
              });
              return;
            }
            const line = parseStatus(result.stdout, false, job.externalId as string)[0];
            out.set(
              job.id,
              line
                ? stateOf(line, profile, 'status')
                : {
                    kind: 'absent',
                    source: 'status',
                    detail: 'the status command printed nothing',
                  },
            );
          }),
        );
      }
      // The wrapper's exit-code file settles finished and vanished jobs.
      const settle = live.filter((job) => {
        const observation = out.get(job.id);
        return (
          observation?.kind === 'absent' ||
          (observation?.kind === 'found' && TERMINAL.has(observation.state))
        );
      });
      if (settle.length > 0) {
        const result = await context.transport
          .runScript(
            EXIT_CODES_SCRIPT,
            settle.map((job) => String(job.data.jobDir)),
            { timeoutMs: 60_000 },
          )
          .catch(() => null);
        const codes = parseExitCodes(result?.stdout ?? '');
        for (const job of settle) {
          const code = codes.get(String(job.data.jobDir));
          if (code === undefined) continue;
          const observation = out.get(job.id) as ObservationV1;
          const exact = exitObservation(code, 'exit-code-file') as FoundObservationV1;
          if (
            observation.kind === 'found' &&
            (observation.state === 'cancelled' ||
              observation.failureKind === 'infrastructure' ||
              observation.reason === 'timeout')
          ) {
            out.set(job.id, { ...observation, exitCode: code, signal: exact.signal ?? null });
          } else {
            out.set(job.id, {
              ...exact,
              nativeState:
                observation.kind === 'found' ? observation.nativeState : exact.nativeState,
            });
          }
        }
      }
      return out;
    },

    async cancel(jobs, context) {
      const out = new Map<string, CancelOutcomeV1>();
      const first = jobs[0];
      if (!first) return out;
      const templates = parsedTemplates(first.profile);
      const live = jobs.filter((job) => job.externalId !== null);
      const record = (chunk: readonly BackendJobV1[], result: RunResultV1): void => {
        for (const job of chunk) {
          out.set(
            job.id,
            result.exitCode === 0
              ? { kind: 'sent' }
              : {
                  kind: 'failed',
                  error: { code: 'E_CANCEL_FAILED', message: `cancel command: ${failure(result)}` },
                },
          );
        }
      };
      if (templates.cancel.placeholders.has('external_ids')) {
        for (let index = 0; index < live.length; index += BATCH) {
          const chunk = live.slice(index, index + BATCH);
          record(
            chunk,
            await run(
              context,
              first.profile,
              renderCommand(
                templates.cancel,
                jobValues(chunk[0] as BackendJobV1),
                chunk.map((job) => job.externalId as string),
                'options.cancel',
              ),
            ),
          );
        }
      } else {
        for (const job of live)
          record(
            [job],
            await run(
              context,
              first.profile,
              renderCommand(templates.cancel, jobValues(job), [], 'options.cancel'),
            ),
          );
      }
      return out;
    },

    async readLog(job, readOptions, context): Promise<LogChunkV1> {
      const template = parsedTemplates(job.profile).logs;
      if (!template)
        return readRemoteLog(context.transport, String(job.data.log ?? ''), readOptions);
      const result = await context.transport.run(
        renderCommand(template, jobValues(job), [], 'options.logs'),
        {
          timeoutMs: (options(job.profile).timeoutSeconds ?? 120) * 1000,
          encoding: 'buffer',
          maxOutputBytes: LOGS_COMMAND_MAX_BYTES,
        },
      );
      if (result.exitCode !== 0)
        throw new YonderError('E_LOG_UNAVAILABLE', `logs command: ${failure(result)}`);
      if (result.stdoutTruncated)
        throw new YonderError(
          'E_LOG_UNAVAILABLE',
          `The logs command printed more than ${LOGS_COMMAND_MAX_BYTES / 1048576} MiB, the most yonder takes from it; for logs of any size, leave options.logs unset so the job's log file is read.`,
        );
      // The command prints the whole log: the part asked for is cut from its bytes.
      return sliceLog(outputBytes(context.transport, result, 'the logs command'), readOptions);
    },
  };
  return backend;
}

/** A short key for a profile's commands: jobs are polled together only with the same commands. */
function backendKey(profile: Profile): string {
  const opts = options(profile);
  return createHash('sha256')
    .update(JSON.stringify([opts.status, opts.cancel, opts.states ?? {}]))
    .digest('hex')
    .slice(0, 12);
}
