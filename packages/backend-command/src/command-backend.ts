/** The command backend's factory: its capabilities, profile checks and probe, with submit, poll and the templates from their own files. */
import {
  type BackendContextV1,
  type BackendJobV1,
  type BackendV1,
  type CancelOutcomeV1,
  getErrorMessage,
  type LogChunkV1,
  type ProbeReportV1,
  type Profile,
  type RunResultV1,
  type ValidationIssue,
  YonderError,
} from '@yonder/core';
import {
  CHECK_PROGRAMS_SCRIPT,
  cachedProbe,
  checkTemplate,
  outputBytes,
  programProblems,
  RUN_TRUSTED_PROGRAM,
  readRemoteLog,
  removeJobDirectories,
  sliceLog,
} from '@yonder/core/backend-kit';
import { type CommandOptions, CommandOptionsSchema, PLACEHOLDERS } from './command-options.js';
import { commandPoll } from './command-poll.js';
import { commandSubmit } from './command-submit.js';
import {
  BATCH,
  backendKey,
  commandFailure,
  jobValues,
  parsedTemplates,
  renderCommand,
  runCommand,
} from './command-templates.js';

export { jobScript } from './command-submit.js';
export { renderCommand } from './command-templates.js';

export const COMMAND_BACKEND_ID = 'command';

/** The most a logs command may print: it prints the whole log every time it is read. */
const LOGS_COMMAND_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The command backend: any scheduler, through the profile's submit, status, cancel and
 * (optionally) logs command templates, run through the profile's transport. yonder writes the
 * job script, so exit codes are known even when the scheduler never reports them.
 */
export function createCommandBackend(): BackendV1<CommandOptions> {
  const probe = (
    profile: Profile,
    context: BackendContextV1<CommandOptions>,
    fresh: boolean,
  ): Promise<ProbeReportV1> =>
    cachedProbe(
      context.stateDirectory,
      `command|${context.route ?? context.transport.target}|${backendKey(context.options)}`,
      3_600_000,
      fresh,
      async (): Promise<ProbeReportV1> => {
        const programs = Object.entries(parsedTemplates(context.options)).map(
          ([field, template]) => {
            const first = template.words[0]?.[0];
            return [`options.${field}`, first && 'literal' in first ? first.literal : ''] as const;
          },
        );
        // Each program judged by the trust rule where it is found, as every run judges it.
        const result = await context.transport.runScript(
          `printf '%s\\n' "$HOME"\n${CHECK_PROGRAMS_SCRIPT}`,
          programs.flat(),
          { timeoutMs: 60_000 },
        );
        if (result.exitCode !== 0)
          return {
            ok: false,
            facts: {},
            problems: [`the target did not answer: ${commandFailure(result)}`],
          };
        const [home = '', ...rest] = result.stdout.split('\n');
        const problems = programProblems(rest.join('\n'));
        if (!home.startsWith('/') && !profile.workdir)
          problems.push('the remote $HOME is not an absolute path: set a workdir in the profile');
        return {
          ok: problems.length === 0,
          facts: {
            transport: context.transport.target,
            home,
            programs: programs.map(([, program]) => program).filter(Boolean),
          },
          problems,
        };
      },
    );

  const backend: BackendV1<CommandOptions> = {
    specificationVersion: 'v1',
    id: COMMAND_BACKEND_ID,
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'optional',
      recoverSubmit: false,
      logs: true,
      // Queues and their accounting lag: a job no source knows gets two minutes (and a few
      // healthy polls) before it is called lost.
      absentGraceSeconds: 120,
      transport: 'ssh',
    },
    optionsSchema: CommandOptionsSchema,

    validateProfile(profile) {
      // Reported beside the schema's issues, so the options may not fit it yet: read as JSON.
      const opts = profile.options ?? {};
      const issues: ValidationIssue[] = [];
      const check = (field: 'submit' | 'status' | 'cancel' | 'logs', needs: string[][]): void => {
        const text = opts[field];
        if (typeof text !== 'string') return;
        const { issues: found, parsed } = checkTemplate(text, `options.${field}`, PLACEHOLDERS);
        issues.push(...found);
        // On this machine a program like `./qsub` or `bin/qsub` is looked up in whatever
        // directory yonder runs in (another user's /tmp, say); over ssh it is below the home.
        const first = parsed?.words[0]?.[0];
        if (profile.host === undefined && first && 'literal' in first) {
          const program = first.literal;
          if (program.includes('/') && !program.startsWith('/'))
            issues.push({
              path: `options.${field}`,
              message: `names the program "${program}" by a relative path, which is looked up in the directory yonder is run in; give its absolute path`,
            });
        }
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
      if (typeof opts.idPattern === 'string') {
        try {
          new RegExp(opts.idPattern);
        } catch (error) {
          issues.push({
            path: 'options.idPattern',
            message: `is not a valid regular expression: ${getErrorMessage(error)}`,
          });
        }
      }
      return issues;
    },

    targetKey(profile, options) {
      return `command:${profile.host ?? 'local'}:${backendKey(options)}`;
    },

    probe: (profile, context) => probe(profile, context, true),

    async submit(request, context) {
      const report = await probe(request.profile, context, false);
      if (!report.ok)
        throw new YonderError(
          'E_SUBMIT_FAILED',
          `The target cannot run this profile's commands: ${report.problems.join('; ')}`,
        );
      return commandSubmit(request, context, report);
    },

    poll: (jobs, context) => commandPoll(jobs, context),

    async cancel(jobs, context) {
      const out = new Map<string, CancelOutcomeV1>();
      const first = jobs[0];
      if (!first) return out;
      const templates = parsedTemplates(context.options);
      const live = jobs.filter((job) => job.externalId !== null);
      const record = (chunk: readonly BackendJobV1[], result: RunResultV1): void => {
        for (const job of chunk) {
          out.set(
            job.id,
            result.exitCode === 0
              ? { kind: 'sent' }
              : {
                  kind: 'failed',
                  error: {
                    code: 'E_CANCEL_FAILED',
                    message: `cancel command: ${commandFailure(result)}`,
                  },
                },
          );
        }
      };
      if (templates.cancel.placeholders.has('external_ids')) {
        for (let index = 0; index < live.length; index += BATCH) {
          const chunk = live.slice(index, index + BATCH);
          record(
            chunk,
            await runCommand(
              context,
              'options.cancel',
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
            await runCommand(
              context,
              'options.cancel',
              renderCommand(templates.cancel, jobValues(job), [], 'options.cancel'),
            ),
          );
      }
      return out;
    },

    async readLog(job, readOptions, context): Promise<LogChunkV1> {
      const template = parsedTemplates(context.options).logs;
      if (!template)
        return readRemoteLog(context.transport, String(job.data.log ?? ''), readOptions);
      const result = await context.transport.runScript(
        RUN_TRUSTED_PROGRAM,
        ['options.logs', ...renderCommand(template, jobValues(job), [], 'options.logs')],
        {
          timeoutMs: (context.options.timeoutSeconds ?? 120) * 1000,
          encoding: 'buffer',
          maxOutputBytes: LOGS_COMMAND_MAX_BYTES,
        },
      );
      if (result.exitCode !== 0)
        throw new YonderError('E_LOG_UNAVAILABLE', `logs command: ${commandFailure(result)}`);
      if (result.stdoutTruncated)
        throw new YonderError(
          'E_LOG_UNAVAILABLE',
          `The logs command printed more than ${LOGS_COMMAND_MAX_BYTES / 1048576} MiB, the most yonder takes from it; for logs of any size, leave options.logs unset so the job's log file is read.`,
        );
      // The command prints the whole log: the part asked for is cut from its bytes.
      return sliceLog(outputBytes(context.transport, result, 'the logs command'), readOptions);
    },

    // The job directory yonder made (script, log, settings) goes when the job is forgotten;
    // what the scheduler itself keeps is its own.
    cleanup: (jobs, context) =>
      removeJobDirectories(
        context.transport,
        jobs.map((job) => ({ id: job.id, jobDir: String(job.data.jobDir ?? '') })),
      ),
  };
  return backend;
}
