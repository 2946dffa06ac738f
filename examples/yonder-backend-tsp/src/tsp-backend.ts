import {
  type BackendV1,
  type CancelOutcomeV1,
  getErrorMessage,
  type JsonObject,
  type ObservationV1,
  type RunOptionsV1,
  type Static,
  Type,
  YonderError,
} from '@yonder/core';
import {
  EXIT_CODES_SCRIPT,
  exitObservation,
  JOB_WRAPPER_SCRIPT,
  jobPayload,
  PREPARE_JOB_DIRECTORY,
  parseExitCodes,
  parseExternalId,
  readRemoteLog,
  replacePlaceholder,
  shJoin,
  shQuote,
} from '@yonder/core/backend-kit';

/** Profile options: which task-spooler server to use, and how many jobs it runs at once. */
export const TspOptionsSchema = Type.Object(
  {
    socket: Type.Optional(
      Type.String({
        description:
          'TS_SOCKET: the task-spooler server socket (default: tsp’s own per-user socket).',
      }),
    ),
    slots: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 256,
        description: 'Jobs the server runs at once (tsp -S).',
      }),
    ),
  },
  { additionalProperties: false },
);

export type TspOptions = Static<typeof TspOptionsSchema>;

/** Run tsp with the profile's socket. */
function tspEnv(options: TspOptions): RunOptionsV1 {
  const { socket } = options;
  return { timeoutMs: 30_000, ...(socket ? { env: { TS_SOCKET: socket } } : {}) };
}

/** Prepare the job directory from stdin, write job.sh, enqueue it with a label; prints DIR and tsp's id. */
const SUBMIT = `set -u
w=$1; id=$2; lengths=$3; script=$4; slots=$5; shift 5
fallback="$HOME/.yonder/tsp"
${PREPARE_JOB_DIRECTORY}
printf '%s' "$script" > "$d/job.sh"
printf 'DIR %s\\n' "$d"
if [ -n "$slots" ]; then tsp -S "$slots" >/dev/null; fi
tsp -L "yonder:$id" sh "$d/job.sh" || { rm -rf -- "$d"; exit 1; }
`;

/** Cancel: $1.. ids; running jobs are killed (tsp -k), queued ones removed (tsp -r). */
const CANCEL = `for id in "$@"; do
  case $(tsp -s "$id" 2>/dev/null) in
    running) tsp -k "$id" >/dev/null 2>&1 && echo "$id sent" || echo "$id failed" ;;
    queued) tsp -r "$id" >/dev/null 2>&1 && echo "$id sent" || echo "$id failed" ;;
    *) echo "$id done" ;;
  esac
done
`;

/**
 * A backend for task-spooler: one `tsp -l` per poll for every job, exit codes from yonder's
 * job wrapper, cancel with `tsp -k`/`tsp -r`. It uses only @yonder/core's public exports (the root and backend-kit).
 */
export function createTspBackend(): BackendV1<TspOptions> {
  return {
    specificationVersion: 'v1',
    id: 'tsp',
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'optional',
      recoverSubmit: false,
      logs: true,
    },
    optionsSchema: TspOptionsSchema,
    // Beside the schema's own issues, so the options are read as they are (JSON), not typed.
    validateProfile: (profile) =>
      typeof profile.options?.socket === 'string' && !profile.options.socket.startsWith('/')
        ? [{ path: 'options.socket', message: 'must be an absolute path' }]
        : [],
    targetKey: (profile, options) => `tsp:${profile.host ?? 'local'}:${options.socket ?? ''}`,

    async probe(_profile, context) {
      const result = await context.transport
        .run(['tsp', '-S'], tspEnv(context.options))
        .catch((error: unknown) => getErrorMessage(error));
      if (typeof result === 'string')
        return { ok: false, facts: {}, problems: [`tsp cannot be run: ${result}`] };
      return {
        ok: result.exitCode === 0,
        facts: { slots: Number(result.stdout.trim()) },
        problems: result.exitCode === 0 ? [] : [result.stderr.trim()],
      };
    },

    async submit(request, context) {
      const home = await context.transport.runScript('printf "%s" "$HOME"', []);
      const workdir = request.profile.workdir ?? `${home.stdout}/.yonder/tsp`;
      const jobDir = `${workdir}/${request.id}`;
      const argv =
        request.settingsText === undefined
          ? [...request.argv]
          : replacePlaceholder(request.argv, 'settings', `${jobDir}/settings.json`);
      const script = [
        '#!/bin/sh',
        `exec >> ${shQuote(`${jobDir}/job.log`)} 2>&1`,
        `cd -- ${shQuote(request.cwd ?? jobDir)} || exit 1`,
        `exec ${shJoin(['sh', '-c', JOB_WRAPPER_SCRIPT, 'yonder-job', jobDir, ...argv])}`,
        '',
      ].join('\n');
      const { input, lengths } = jobPayload(request.env, request.secrets, request.settingsText);
      const { slots } = context.options;
      const result = await context.transport.runScript(
        SUBMIT,
        [workdir, request.id, lengths, script, slots === undefined ? '' : String(slots)],
        {
          ...tspEnv(context.options),
          input,
        },
      );
      if (result.exitCode !== 0)
        throw new YonderError(
          'E_SUBMIT_FAILED',
          `tsp refused the job: ${result.stderr.trim() || result.stdout.trim()}`,
        );
      const id = result.stdout.split('\n').find((line) => /^\d+$/.test(line.trim()));
      if (!id)
        throw new YonderError(
          'E_SUBMIT_FAILED',
          `tsp printed no job id: ${JSON.stringify(result.stdout)}`,
        );
      const data: JsonObject = { jobDir, log: `${jobDir}/job.log` };
      return { externalId: parseExternalId(id).id, state: 'pending', nativeState: 'queued', data };
    },

    async poll(jobs, context) {
      const out = new Map<string, ObservationV1>();
      const first = jobs[0];
      if (!first) return out;
      const list = await context.transport.run(['tsp', '-l'], tspEnv(context.options));
      if (list.exitCode !== 0)
        throw new YonderError('E_SCHEDULER_UNAVAILABLE', `tsp -l failed: ${list.stderr.trim()}`);
      const states = new Map<string, string>();
      for (const line of list.stdout.split('\n').slice(1)) {
        const [id, state] = line.trim().split(/\s+/);
        if (id && state) states.set(id, state);
      }
      const codes = new Map<string, number>();
      const finished = jobs.filter(
        (job) =>
          states.get(job.externalId ?? '') === 'finished' || !states.has(job.externalId ?? ''),
      );
      if (finished.length > 0) {
        const result = await context.transport.runScript(
          EXIT_CODES_SCRIPT,
          finished.map((job) => String(job.data.jobDir)),
        );
        for (const [dir, code] of parseExitCodes(result.stdout)) codes.set(dir, code);
      }
      for (const job of jobs) {
        const state = states.get(job.externalId ?? '');
        const code = codes.get(String(job.data.jobDir));
        if (code !== undefined) out.set(job.id, exitObservation(code, 'exit-code-file'));
        else if (state === 'queued' || state === 'allocating')
          out.set(job.id, { kind: 'found', state: 'pending', nativeState: state, source: 'tsp' });
        else if (state === 'running')
          out.set(job.id, { kind: 'found', state: 'running', nativeState: state, source: 'tsp' });
        else if (state === 'finished') {
          // Finished without an exit code: `tsp -k` (SIGTERM to the job) ended it before the
          // wrapper could write one.
          out.set(job.id, {
            kind: 'found',
            state: 'failed',
            nativeState: state,
            signal: 'SIGTERM',
            reason: 'killed by SIGTERM',
            failureKind: 'application',
            source: 'tsp',
          });
        } else
          out.set(job.id, {
            kind: 'absent',
            source: 'tsp',
            detail: state ? `tsp says ${state}` : 'tsp does not list the job',
          });
      }
      return out;
    },

    async cancel(jobs, context) {
      const out = new Map<string, CancelOutcomeV1>();
      const first = jobs[0];
      if (!first) return out;
      const result = await context.transport.runScript(
        CANCEL,
        jobs.map((job) => job.externalId ?? ''),
        tspEnv(context.options),
      );
      const words = new Map(
        result.stdout.split('\n').map((line) => line.split(' ') as [string, string]),
      );
      for (const job of jobs) {
        const word = words.get(job.externalId ?? '');
        out.set(
          job.id,
          word === 'sent'
            ? { kind: 'sent' }
            : word === 'done'
              ? { kind: 'not-running' }
              : {
                  kind: 'failed',
                  error: {
                    code: 'E_CANCEL_FAILED',
                    message: `tsp could not cancel job ${job.externalId}`,
                  },
                },
        );
      }
      return out;
    },

    readLog: (job, options, context) =>
      readRemoteLog(context.transport, String(job.data.log ?? ''), options),
  };
}
