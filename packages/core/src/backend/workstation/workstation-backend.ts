/**
 * The workstation backend: jobs on a machine without a scheduler (this one, or one reached
 * over ssh), run by the same fixed sh scripts through whichever transport the context gives.
 */
import { hostname } from 'node:os';
import { posix } from 'node:path';
import { type TSchema, Type } from '@sinclair/typebox';
import { requestLaunch } from '../../container/container-launch.js';
import { probeContainer } from '../../container/probe-container.js';
import { assertValid } from '../../errors/validation-error.js';
import { YonderError } from '../../errors/yonder-error.js';
import type { JsonObject } from '../../json/json-value.js';
import { cachedProbe } from '../../probe/probe-cache.js';
import { readRemoteLog } from '../../remote/read-remote-log.js';
import { jobPayload, outputField } from '../../remote/remote-scripts.js';
import { removeJobDirectories } from '../../remote/remove-job-directories.js';
import type {
  BackendCapabilitiesV1,
  BackendContextV1,
  BackendV1,
  CancelOutcomeV1,
  ObservationV1,
  ProbeReportV1,
  SubmitRequestV1,
  SubmitResultV1,
} from '../../spec/backend/v1/backend-v1.js';
import type { Profile } from '../../spec/profile.js';
import type { RunResultV1 } from '../../spec/transport/v1/transport-v1.js';
import { replacePlaceholder } from '../../template/render-template.js';
import { parseExternalId } from '../../validation/validate-fields.js';
import {
  cancelOutcome,
  identityOf,
  imageOf,
  indexedLines,
  jobData,
  pollObservation,
  recoveredSubmit,
} from './workstation-answers.js';
import {
  WORKSTATION_CANCEL_SCRIPT,
  WORKSTATION_POLL_SCRIPT,
  WORKSTATION_PROBE_SCRIPT,
  WORKSTATION_RECOVER_SCRIPT,
  WORKSTATION_SUBMIT_SCRIPT,
  WORKSTATION_WORKDIR_SCRIPT,
} from './workstation-scripts.js';

const TIMEOUT_MS = 60_000;
/** The scripts' exit status for a work directory another user could change (trusted_dir). */
const UNTRUSTED_EXIT = 23;
/** The submit script's exit statuses for a container it refused (container_check). */
const CONTAINER_REFUSED = new Set([30, 31, 32]);
/** The submit script's exit when the job's working directory is missing or cannot be entered: the submitter's error. */
const CWD_EXIT = 20;
const DEFAULT_PROBE_TTL_SECONDS = 3600;
/** Where job directories go on the target when neither the profile nor the backend says. */
const HOME_WORKDIR = '.yonder/jobs';

/** What a workstation backend reads from `profile.options` (its schema may allow no more). */
export type WorkstationProfileOptions = {
  /** How long the probe is cached; default 3600. */
  readonly probeTtlSeconds?: number;
};

/** What makes one workstation backend differ from another. */
export interface WorkstationBackendOptions {
  /** The registry id (`local`, `ssh`). */
  readonly id: string;
  /** `none`: jobs run on this machine; `required`: on `profile.host`, through the transport. */
  readonly host: BackendCapabilitiesV1['host'];
  /** The registry id of the transport that reaches a host (`capabilities.transport`). */
  readonly transport?: string;
  /**
   * How long, in seconds, after a job entered the ledger its interrupted submit may still be on
   * its way (`capabilities.submitGraceSeconds`): until then a job directory without a started
   * wrapper is not taken as never started.
   */
  readonly submitGraceSeconds: number;
  /**
   * Schema of `profile.options` (default: none allowed); `probeTtlSeconds` is honoured, so the
   * schema's type must fit `WorkstationProfileOptions`.
   */
  readonly optionsSchema?: TSchema & { static: WorkstationProfileOptions };
  /** The work directory when the profile names none. Default: `$HOME/.yonder/jobs` on the target. */
  readonly defaultWorkdir?: (context: BackendContextV1) => string;
  /** The directory a job runs in when its spec names none. Default: its job directory. */
  readonly defaultCwd?: () => string;
}

function failure(result: RunResultV1): string {
  return (
    (result.stderr.trim() || result.stdout.trim()).slice(-1200) ||
    `exit status ${result.exitCode ?? result.signal}`
  );
}

/**
 * Run one of the scripts on the target; a non-zero exit is an error with `code` and `what`.
 * @throws YonderError `code` when the script failed, or the transport's error.
 */
async function runScript(
  context: BackendContextV1,
  script: string,
  args: readonly string[],
  code: 'E_TRANSPORT' | 'E_CANCEL_FAILED',
  what: string,
): Promise<RunResultV1> {
  const result = await context.transport.runScript(script, args, { timeoutMs: TIMEOUT_MS });
  if (result.exitCode !== 0) throw new YonderError(code, `${what}: ${failure(result)}`);
  return result;
}

/** Why a record's process identity is not used: it cannot be a job's, so nothing is signalled. */
function unusableIdentity(data: JsonObject): string {
  return `The job's record names process ${JSON.stringify(data.pid)} (start time ${JSON.stringify(data.startTime)}), which cannot be this job's: it is neither polled nor signalled (nothing was signalled).`;
}

function probeTtlMs(options: WorkstationProfileOptions): number {
  return (options.probeTtlSeconds ?? DEFAULT_PROBE_TTL_SECONDS) * 1000;
}

/** The machine a script ran on, from its `BOOT` and `HOST` lines. */
function machineOf(stdout: string): { boot: string; host: string } {
  return { boot: outputField(stdout, 'BOOT') ?? '', host: outputField(stdout, 'HOST') ?? '' };
}

/**
 * Create a workstation backend. Jobs run detached (own session where `setsid` exists) in
 * private job directories, with identity pid + start time + boot id checked on the target
 * before any signal; cancel signals the process group; one script run per target serves a
 * poll, a recovery or a cancel of all its jobs.
 */
export function createWorkstationBackend(
  options: WorkstationBackendOptions,
): BackendV1<WorkstationProfileOptions> {
  const { id, submitGraceSeconds } = options;

  const targetKey = (profile: Profile): string =>
    options.host === 'none' ? `${id}:${hostname()}` : `${id}:${profile.host ?? ''}`;

  /** What the target is (cached): its $HOME, boot id, host name, setsid, sh and system. */
  const probeTarget = (
    profile: Profile,
    context: BackendContextV1<WorkstationProfileOptions>,
    fresh: boolean,
  ): Promise<ProbeReportV1> =>
    cachedProbe(
      context.stateDirectory,
      `${targetKey(profile)}|${context.route ?? context.transport.target}`,
      probeTtlMs(context.options),
      fresh,
      async (): Promise<ProbeReportV1> => {
        const result = await context.transport.runScript(WORKSTATION_PROBE_SCRIPT, [], {
          timeoutMs: TIMEOUT_MS,
        });
        if (result.exitCode !== 0)
          return {
            ok: false,
            facts: {},
            problems: [`the host did not answer: ${failure(result)}`],
          };
        const field = (name: string): string => outputField(result.stdout, name) ?? '';
        const bootId = field('BOOT');
        const detach = field('DETACH');
        const problems =
          bootId && bootId !== 'unknown'
            ? []
            : ['the host has no /proc/sys/kernel/random/boot_id: only Linux hosts are supported'];
        if (detach === 'none')
          problems.push(
            'the host has none of setsid, perl or python3, so a job cannot be started in a process group of its own and a cancel could not reach all of it: install setsid (util-linux)',
          );
        return {
          ok: problems.length === 0,
          facts: {
            transport: context.transport.target,
            host: field('HOST'),
            home: field('HOME'),
            bootId,
            setsid: field('SETSID') || null,
            detach: detach || null,
            shell: field('SHELL'),
            system: field('SYSTEM'),
          },
          problems,
        };
      },
    );

  /** The profile's work directory on the target, or null when none can be derived. */
  const workdirOf = (
    profile: Profile,
    context: BackendContextV1,
    report: ProbeReportV1,
  ): string | null => {
    if (profile.workdir) return profile.workdir;
    if (options.defaultWorkdir) return options.defaultWorkdir(context);
    const home = String(report.facts.home ?? '');
    return home.startsWith('/') ? `${home}/${HOME_WORKDIR}` : null;
  };
  const noWorkdir = 'the remote $HOME is not an absolute path: set a workdir in the profile';

  /** The target's facts, ready for jobs of this profile, and the work directory. */
  const ready = async (
    profile: Profile,
    context: BackendContextV1,
  ): Promise<{ report: ProbeReportV1; workdir: string }> => {
    const report = await probeTarget(profile, context, false);
    const workdir = report.ok ? workdirOf(profile, context, report) : null;
    if (workdir === null) {
      const problems = report.ok ? [noWorkdir] : report.problems;
      throw new YonderError('E_TRANSPORT', `The host cannot run jobs: ${problems.join('; ')}`);
    }
    return { report, workdir };
  };

  return {
    specificationVersion: 'v1',
    id,
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: options.host,
      recoverSubmit: true,
      logs: true,
      submitGraceSeconds,
      containers: ['apptainer', 'podman'],
      ...(options.transport === undefined ? {} : { transport: options.transport }),
    },
    optionsSchema: options.optionsSchema ?? Type.Object({}, { additionalProperties: false }),

    validateProfile(profile) {
      return options.host === 'none' && profile.host
        ? [{ path: 'host', message: `the ${id} backend runs on this machine; remove the host` }]
        : [];
    },

    targetKey,

    async probe(profile, context) {
      const report = await probeTarget(profile, context, true);
      if (!report.ok) return report;
      const workdir = workdirOf(profile, context, report);
      if (workdir === null) return { ok: false, facts: report.facts, problems: [noWorkdir] };
      const result = await context.transport.runScript(WORKSTATION_WORKDIR_SCRIPT, [workdir], {
        timeoutMs: TIMEOUT_MS,
      });
      const problems =
        result.exitCode === 0
          ? []
          : [`The work directory ${workdir} cannot be used: ${failure(result)}`];
      const container = await probeContainer(context.transport, profile, TIMEOUT_MS);
      problems.push(...container.problems);
      return {
        ok: problems.length === 0,
        facts: { ...report.facts, workdir, ...container.facts },
        problems,
      };
    },

    async submit(request, context) {
      return submitJob(request, context, await ready(request.profile, context));
    },

    async recover(requests, context) {
      const out = new Map<string, SubmitResultV1 | null>();
      const first = requests[0];
      if (!first) return out;
      const { report } = await ready(first.profile, context);
      const dirs = requests.map((request) => {
        const workdir = workdirOf(request.profile, context, report);
        return workdir === null ? '' : posix.join(workdir, request.id);
      });
      const result = await runScript(
        context,
        WORKSTATION_RECOVER_SCRIPT,
        dirs,
        'E_TRANSPORT',
        'Looking for interrupted submits failed',
      );
      const machine = machineOf(result.stdout);
      const lines = indexedLines(result.stdout);
      requests.forEach((request, index) => {
        const pastGrace = Date.now() - Date.parse(request.createdAt) > submitGraceSeconds * 1000;
        const found = recoveredSubmit(lines.get(index), dirs[index] as string, machine, pastGrace);
        if (found !== undefined) out.set(request.id, found);
      });
      return out;
    },

    async poll(jobs, context) {
      const out = new Map<string, ObservationV1>();
      const asked = jobs.flatMap((job) => {
        const identity = identityOf(job.data);
        const jobDir = typeof job.data.jobDir === 'string' ? job.data.jobDir : '';
        if (identity && jobDir) return [{ job, identity, jobDir }];
        out.set(job.id, {
          kind: 'query-failed',
          source: id,
          error: {
            code: 'E_CORRUPT_RECORD',
            message:
              job.data.pid === undefined || jobDir === ''
                ? 'The job has no directory or process identity recorded.'
                : unusableIdentity(job.data),
          },
        });
        return [];
      });
      if (asked.length === 0) return out;
      // A job whose cancel was asked for is also looked for by its marker: it is not over while
      // any process carrying it runs.
      const args = asked.flatMap(({ job, identity, jobDir }) => [
        jobDir,
        String(identity.pid),
        identity.startTime,
        job.cancelRequested ? job.id : '',
      ]);
      const result = await runScript(
        context,
        WORKSTATION_POLL_SCRIPT,
        args,
        'E_TRANSPORT',
        `Polling ${context.transport.target} failed`,
      );
      const machine = machineOf(result.stdout);
      const lines = indexedLines(result.stdout);
      asked.forEach(({ job, identity, jobDir }, index) => {
        out.set(job.id, pollObservation(lines.get(index), identity, jobDir, machine, id));
      });
      return out;
    },

    async cancel(jobs, context, cancelOptions) {
      const out = new Map<string, CancelOutcomeV1>();
      const asked = jobs.flatMap((job) => {
        const identity = identityOf(job.data);
        if (identity) return [{ job, identity }];
        // Nothing is signalled for a record without a process identity that can be a job's.
        out.set(
          job.id,
          job.data.pid === undefined
            ? { kind: 'not-running' }
            : {
                kind: 'failed',
                error: { code: 'E_CORRUPT_RECORD', message: unusableIdentity(job.data) },
              },
        );
        return [];
      });
      if (asked.length === 0) return out;
      const args = [
        cancelOptions.force ? 'KILL' : 'TERM',
        ...asked.flatMap(({ job, identity }) => [
          typeof job.data.jobDir === 'string' ? job.data.jobDir : '',
          String(identity.pid),
          identity.startTime,
          identity.bootId,
          identity.host,
          job.id,
        ]),
      ];
      const result = await runScript(
        context,
        WORKSTATION_CANCEL_SCRIPT,
        args,
        'E_CANCEL_FAILED',
        `Cancelling on ${context.transport.target} failed`,
      );
      const lines = indexedLines(result.stdout);
      asked.forEach(({ job, identity }, index) => {
        out.set(job.id, cancelOutcome(lines.get(index), identity.pid));
      });
      return out;
    },

    async readLog(job, readOptions, context) {
      return readRemoteLog(context.transport, String(job.data.log ?? ''), readOptions);
    },

    cleanup: (jobs, context) =>
      removeJobDirectories(
        context.transport,
        jobs.map((job) => ({
          id: job.id,
          jobDir: typeof job.data.jobDir === 'string' ? job.data.jobDir : '',
        })),
      ),
  };

  /** Start one job: its files come on stdin, its values as arguments, never in the script. */
  async function submitJob(
    request: SubmitRequestV1,
    context: BackendContextV1,
    { workdir }: { workdir: string },
  ): Promise<SubmitResultV1> {
    const jobDir = posix.join(workdir, request.id);
    const argv =
      request.settingsText === undefined
        ? [...request.argv]
        : replacePlaceholder(request.argv, 'settings', `${jobDir}/settings.json`);
    const cwd = request.cwd ?? options.defaultCwd?.() ?? '';
    const { launch, issues } = requestLaunch(request, { workdir, jobDir, argv });
    assertValid(
      'E_SUBMIT_REFUSED',
      `The job cannot run in its container on ${context.transport.target}`,
      issues,
    );
    const { input, lengths } = jobPayload(
      launch?.env ?? {
        ...request.env,
        YONDER_JOB_ID: request.id,
        YONDER_JOB_NAME: request.name,
        YONDER_JOB_DIR: jobDir,
      },
      launch?.secrets ?? request.secrets,
      request.settingsText,
    );
    // The secrets travel on stdin only: never in the environment of the script, the wrapper or
    // anything else started before the job (the local transport passes on yonder's own). In a
    // container the job's working directory is inside it; the wrapper starts in the job directory.
    const result = await context.transport.runScript(
      WORKSTATION_SUBMIT_SCRIPT,
      [
        posix.dirname(jobDir),
        request.id,
        lengths,
        launch ? '' : cwd,
        ...(launch ? launch.check : ['', '', '0']),
        ...(launch ? launch.args : argv),
      ],
      { input, timeoutMs: TIMEOUT_MS, unsetEnv: Object.keys(request.secrets) },
    );
    if (result.exitCode !== null && CONTAINER_REFUSED.has(result.exitCode))
      throw new YonderError(
        'E_SUBMIT_REFUSED',
        `${failure(result).replace(/^yonder: /, '')}; nothing was started.`,
      );
    if (result.exitCode === UNTRUSTED_EXIT)
      throw new YonderError('E_UNTRUSTED_PATH', failure(result).replace(/^yonder: /, ''));
    if (result.exitCode === CWD_EXIT)
      throw new YonderError(
        'E_SUBMIT_REFUSED',
        `${failure(result).replace(/^yonder: t/, 'T')} on ${context.transport.target}; give the job an existing working directory.`,
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
    const data = jobData(
      field('DIR'),
      { pid: Number(pid), startTime: field('START') },
      machineOf(result.stdout),
    );
    const image = launch ? imageOf(field('IMAGE')) : undefined;
    return {
      externalId: parseExternalId(pid).id,
      state: 'running',
      nativeState: 'running',
      data,
      ...(image ? { containerImage: image } : {}),
    };
  }
}
