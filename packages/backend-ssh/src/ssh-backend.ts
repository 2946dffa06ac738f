import {
  type BackendContextV1,
  type BackendV1,
  type CancelOutcomeV1,
  cachedProbe,
  exitObservation,
  type JsonObject,
  jobPayload,
  type LogChunkV1,
  type ObservationV1,
  outputField,
  type ProbeReportV1,
  type Profile,
  parseExternalId,
  type RunResultV1,
  readRemoteLog,
  replacePlaceholder,
  type SubmitResultV1,
  Type,
  YonderError,
} from '@yonder/core';
import {
  SSH_CANCEL_SCRIPT,
  SSH_POLL_SCRIPT,
  SSH_RECOVER_SCRIPT,
  SSH_SUBMIT_SCRIPT,
} from './scripts.js';

export const SSH_BACKEND_ID = 'ssh';
const TIMEOUT_MS = 60_000;
/** Longer than a submit may run on the host: after this, a job that left no trace never started. */
const SSH_SUBMIT_GRACE_SECONDS = 90;

/** Options of an ssh profile. */
export const SshOptionsSchema = Type.Object(
  {
    probeTtlSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        description: 'How long the probe ($HOME, boot id) is cached; default 3600.',
      }),
    ),
  },
  { additionalProperties: false },
);

function failure(result: RunResultV1): string {
  return (
    (result.stderr.trim() || result.stdout.trim()).slice(-1200) ||
    `exit status ${result.exitCode ?? result.signal}`
  );
}

/**
 * The ssh backend, for a workstation without a scheduler: the local backend's behaviour on
 * another machine. Jobs run detached (own session) in private job directories, with
 * identity pid + start time + boot id; cancel signals the process group after re-checking it.
 */
export function createSshBackend(): BackendV1 {
  const probe = (
    profile: Profile,
    context: BackendContextV1,
    fresh: boolean,
  ): Promise<ProbeReportV1> =>
    cachedProbe(
      context.stateDirectory,
      `ssh|${context.transport.target}`,
      (((profile.options ?? {}) as { probeTtlSeconds?: number }).probeTtlSeconds ?? 3600) * 1000,
      fresh,
      async (): Promise<ProbeReportV1> => {
        const result = await context.transport.runScript(
          'printf "%s\\n%s\\n%s\\n%s\\n" "$HOME" "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)" "$(command -v setsid || true)" "$(uname -sr)"',
          [],
          { timeoutMs: TIMEOUT_MS },
        );
        if (result.exitCode !== 0)
          return {
            ok: false,
            facts: {},
            problems: [`the host did not answer: ${failure(result)}`],
          };
        const [home = '', bootId = '', setsid = '', system = ''] = result.stdout.split('\n');
        const problems: string[] = [];
        if (!home.startsWith('/') && !profile.workdir)
          problems.push('the remote $HOME is not an absolute path: set a workdir (--workdir)');
        if (!bootId)
          problems.push(
            'the host has no /proc/sys/kernel/random/boot_id: only Linux hosts are supported',
          );
        return {
          ok: problems.length === 0,
          facts: {
            transport: context.transport.target,
            home,
            bootId,
            setsid: setsid || null,
            system,
          },
          problems,
        };
      },
    );

  return {
    specificationVersion: 'v1',
    id: SSH_BACKEND_ID,
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'required',
      recoverSubmit: true,
      logs: true,
      submitGraceSeconds: SSH_SUBMIT_GRACE_SECONDS,
      transport: 'ssh',
    },
    optionsSchema: SshOptionsSchema,
    validateProfile() {
      return [];
    },
    targetKey(profile) {
      return `ssh:${profile.host ?? ''}`;
    },
    probe: (profile, context) => probe(profile, context, true),

    async submit(request, context) {
      const report = await probe(request.profile, context, false);
      if (!report.ok)
        throw new YonderError(
          'E_TRANSPORT',
          `The host cannot run jobs: ${report.problems.join('; ')}`,
        );
      const workdir = request.profile.workdir ?? `${String(report.facts.home)}/.yonder/jobs`;
      const argv =
        request.settingsText === undefined
          ? [...request.argv]
          : replacePlaceholder(request.argv, 'settings', `${workdir}/${request.id}/settings.json`);
      const { input, lengths } = jobPayload(
        { ...request.env, YONDER_JOB_ID: request.id, YONDER_JOB_NAME: request.name },
        request.secrets,
        request.settingsText,
      );
      const result = await context.transport.runScript(
        SSH_SUBMIT_SCRIPT,
        [workdir, request.id, lengths, request.cwd ?? '', ...argv],
        {
          input,
          timeoutMs: TIMEOUT_MS,
        },
      );
      if (result.exitCode !== 0)
        throw new YonderError(
          'E_SUBMIT_FAILED',
          `The job could not be started on ${context.transport.target}: ${failure(result)}`,
        );
      const field = (name: string): string => outputField(result.stdout, name) ?? '';
      const pid = field('PID');
      if (!/^\d+$/.test(pid))
        throw new YonderError(
          'E_TRANSPORT',
          `The host did not report the job's process id: ${JSON.stringify(result.stdout.slice(-300))}`,
        );
      const jobDir = field('DIR');
      const data: JsonObject = {
        jobDir,
        log: `${jobDir}/job.log`,
        pid: Number(pid),
        startTime: field('START'),
        bootId: field('BOOT'),
      };
      return {
        externalId: parseExternalId(pid).id,
        state: 'running',
        nativeState: 'running',
        data,
      };
    },

    async recover(requests, context) {
      const out = new Map<string, SubmitResultV1 | null>();
      const first = requests[0];
      if (!first) return out;
      const report = await probe(first.profile, context, false);
      const dirs = requests.map(
        (request) =>
          `${request.profile.workdir ?? `${String(report.facts.home)}/.yonder/jobs`}/${request.id}`,
      );
      const result = await context.transport.runScript(SSH_RECOVER_SCRIPT, dirs, {
        timeoutMs: TIMEOUT_MS,
      });
      if (result.exitCode !== 0)
        throw new YonderError(
          'E_TRANSPORT',
          `Looking for interrupted submits failed: ${failure(result)}`,
        );
      const boot = outputField(result.stdout, 'BOOT') ?? '';
      const lines = new Map<number, string[]>();
      for (const line of result.stdout.split('\n')) {
        const match = /^(\d+) (.*)$/.exec(line);
        if (match) lines.set(Number(match[1]), (match[2] as string).split(' '));
      }
      requests.forEach((request, index) => {
        const [word, pid, start] = lines.get(index) ?? [];
        const jobDir = dirs[index] as string;
        if (word === 'FOUND' && pid && /^\d+$/.test(pid)) {
          const data: JsonObject = {
            jobDir,
            log: `${jobDir}/job.log`,
            pid: Number(pid),
            startTime: start ?? '0',
            bootId: boot,
          };
          out.set(request.id, { externalId: pid, state: 'running', nativeState: 'running', data });
        } else if (word === 'DEAD') {
          // It started, then died without an exit status (its pid may be someone else's now).
          out.set(request.id, null);
        } else if (
          word &&
          Date.now() - Date.parse(request.createdAt) > SSH_SUBMIT_GRACE_SECONDS * 1000
        ) {
          // The submit script runs under a time limit: by now it has finished or died.
          out.set(request.id, null);
        }
      });
      return out;
    },

    async poll(jobs, context) {
      const out = new Map<string, ObservationV1>();
      if (jobs.length === 0) return out;
      const args = jobs.flatMap((job) => [
        String(job.data.jobDir ?? ''),
        String(job.data.pid ?? 0),
        String(job.data.startTime ?? ''),
      ]);
      const result = await context.transport.runScript(SSH_POLL_SCRIPT, args, {
        timeoutMs: TIMEOUT_MS,
      });
      if (result.exitCode !== 0)
        throw new YonderError(
          'E_TRANSPORT',
          `Polling ${context.transport.target} failed: ${failure(result)}`,
        );
      const boot = /^BOOT (.*)$/m.exec(result.stdout)?.[1] ?? '';
      const lines = new Map<number, string>();
      for (const line of result.stdout.split('\n')) {
        const match = /^(\d+) (.*)$/.exec(line);
        if (match) lines.set(Number(match[1]), match[2] as string);
      }
      jobs.forEach((job, index) => {
        const line = lines.get(index);
        if (line === undefined) {
          out.set(job.id, {
            kind: 'query-failed',
            source: 'ssh',
            error: { code: 'E_TRANSPORT', message: 'The host answered nothing for this job.' },
          });
        } else if (line.startsWith('EXIT ')) {
          const code = Number(line.slice(5));
          out.set(
            job.id,
            Number.isInteger(code)
              ? exitObservation(code, 'exit-code-file')
              : {
                  kind: 'query-failed',
                  source: 'exit-code-file',
                  error: { code: 'E_CORRUPT_RECORD', message: `Unreadable exit code: ${line}` },
                },
          );
        } else if (line === 'RUNNING' && boot === job.data.bootId) {
          out.set(job.id, {
            kind: 'found',
            state: 'running',
            nativeState: 'running',
            source: 'process',
          });
        } else {
          out.set(job.id, {
            kind: 'absent',
            source: 'process',
            detail:
              boot !== job.data.bootId
                ? 'the host has rebooted since the job started'
                : 'no process and no exit code',
          });
        }
      });
      return out;
    },

    async cancel(jobs, context, options) {
      const out = new Map<string, CancelOutcomeV1>();
      if (jobs.length === 0) return out;
      const args = [
        options.force ? 'KILL' : 'TERM',
        ...jobs.flatMap((job) => [String(job.data.pid ?? 0), String(job.data.startTime ?? '')]),
      ];
      const result = await context.transport.runScript(SSH_CANCEL_SCRIPT, args, {
        timeoutMs: TIMEOUT_MS,
      });
      if (result.exitCode !== 0)
        throw new YonderError(
          'E_CANCEL_FAILED',
          `Cancelling on ${context.transport.target} failed: ${failure(result)}`,
        );
      const lines = new Map<number, string>();
      for (const line of result.stdout.split('\n')) {
        const match = /^(\d+) (\w+)$/.exec(line);
        if (match) lines.set(Number(match[1]), match[2] as string);
      }
      jobs.forEach((job, index) => {
        const word = lines.get(index);
        out.set(
          job.id,
          word === 'SENT'
            ? { kind: 'sent' }
            : word === 'NOTRUNNING'
              ? { kind: 'not-running' }
              : {
                  kind: 'failed',
                  error: {
                    code: 'E_CANCEL_FAILED',
                    message: `Could not signal process group ${String(job.data.pid)}.`,
                  },
                },
        );
      });
      return out;
    },

    async readLog(job, readOptions, context): Promise<LogChunkV1> {
      return readRemoteLog(context.transport, String(job.data.log ?? ''), readOptions);
    },
  };
}
