import {
  type BackendContextV1,
  type BackendJobV1,
  type BackendV1,
  type CancelOutcomeV1,
  cachedProbe,
  checkAbsolutePath,
  EXIT_CODES_SCRIPT,
  exitObservation,
  type JsonObject,
  jobPayload,
  type LogChunkV1,
  type ObservationV1,
  outputField,
  type ProbeReportV1,
  type Profile,
  parseExitCodes,
  parseExternalId,
  type RunResultV1,
  readRemoteLog,
  replacePlaceholder,
  type SubmitRequestV1,
  type SubmitResultV1,
  type ValidationIssue,
  withoutField,
  YonderError,
} from '@yonder/core';
import {
  isTransientSbatchFailure,
  parseMinJobAge,
  parseSacct,
  parseSbatchId,
  parseSlurmVersion,
  parseSqueue,
  type SacctRow,
  type SqueueRow,
  sbatchFailure,
  slurmObservation,
} from './parse.js';
import { BATCH_SCRIPT, RUN_SLURM_COMMAND, SUBMIT_SCRIPT } from './scripts.js';
import { type SlurmOptions, SlurmOptionsSchema } from './slurm-options.js';

export const SLURM_BACKEND_ID = 'slurm';
/** The oldest Slurm this backend is tested against (Debian 12). */
export const MIN_SLURM_VERSION = { major: 22, minor: 5 };

const SUBMIT_TIMEOUT_MS = 180_000;
const QUERY_TIMEOUT_MS = 60_000;
const CANCEL_TIMEOUT_MS = 120_000;
const CHUNK = 500;
/** A submit younger than this may still be in flight: recovery does not give up on it yet. */
const SLURM_SUBMIT_GRACE_SECONDS = 200;
/** Options yonder sets itself; passing them through would break the job's identity or files. */
const RESERVED_LONG = [
  'output',
  'error',
  'job-name',
  'comment',
  'parsable',
  'wrap',
  'open-mode',
  'chdir',
  'export',
  'requeue',
  'no-requeue',
  'array',
];
const RESERVED_SHORT = new Set(['o', 'e', 'J', 'D', 'a']);
/** sbatch's short options that take a value: in `-c4` the rest of the word is the value. */
const SHORT_WITH_VALUE = new Set([...'ABcCdDeFGiJLmMnNopqStwx']);

/**
 * Whether a scheduler-option word sets something yonder sets itself: a reserved long option,
 * an unambiguous prefix of one (getopt accepts `--outp` for `--output`), or a reserved short
 * option, alone or grouped (`-vJname`).
 */
export function isReservedOption(word: string): boolean {
  if (word.startsWith('--')) {
    const name = word.slice(2).split('=')[0] as string;
    return RESERVED_LONG.some(
      (option) => option === name || (name.length >= 3 && option.startsWith(name)),
    );
  }
  if (!word.startsWith('-') || word.length < 2) return false;
  for (const letter of word.slice(1)) {
    if (RESERVED_SHORT.has(letter)) return true;
    if (SHORT_WITH_VALUE.has(letter)) return false;
  }
  return false;
}

interface SlurmJobData extends JsonObject {
  jobDir: string;
  log: string;
  jobName: string;
  marker: string;
  cluster: string | null;
}

/** Where job directories go: the profile's workdir, else ~/.yonder/slurm on the target. */
function workdirOf(profile: Profile, report: ProbeReportV1): string {
  return profile.workdir ?? `${String(report.facts.home ?? '')}/.yonder/slurm`;
}

function options(profile: Profile): SlurmOptions {
  return (profile.options ?? {}) as SlurmOptions;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let index = 0; index < items.length; index += size)
    out.push(items.slice(index, index + size));
  return out;
}

/** The Slurm job name: `yonder-<id>-<name>`, with only characters safe in every Slurm tool. */
export function slurmJobName(id: string, name: string): string {
  const safe = name
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .replace(/^[-_.]+/, '')
    .slice(0, 40);
  return safe ? `yonder-${id}-${safe}` : `yonder-${id}`;
}

/** The earliest of some ISO times. */
function earliest(times: readonly string[]): string {
  return [...times].sort()[0] as string;
}

function failure(result: RunResultV1): string {
  const text = (result.stderr.trim() || result.stdout.trim()).slice(-1200);
  return text || `exit status ${result.exitCode ?? result.signal}`;
}

/** A Slurm command failed to answer: the scheduler is unavailable (never a job outcome). */
function unavailable(command: string, result: RunResultV1): YonderError {
  return new YonderError('E_SCHEDULER_UNAVAILABLE', `${command} failed: ${failure(result)}`);
}

function slurmTime(iso: string): string {
  return iso.slice(0, 19);
}

/** sbatch options for the job's resources and the profile's choices. */
export function sbatchOptions(request: SubmitRequestV1, jobName: string): string[] {
  const { resources } = request;
  const out = [`--job-name=${jobName}`, `--comment=${request.marker}`];
  const opts = options(request.profile);
  out.push(`--export=${opts.export ?? 'ALL'}`);
  if (!opts.requeue) out.push('--no-requeue');
  if (request.cwd) out.push(`--chdir=${request.cwd}`);
  if (resources.time !== undefined) out.push(`--time=${resources.time}`);
  if (resources.cpus !== undefined) out.push(`--cpus-per-task=${resources.cpus}`);
  if (resources.memory !== undefined) out.push(`--mem=${resources.memory}`);
  if (resources.gpus !== undefined) out.push(`--gpus=${resources.gpus}`);
  if (resources.nodes !== undefined) out.push(`--nodes=${resources.nodes}`);
  if (resources.partition !== undefined) out.push(`--partition=${resources.partition}`);
  if (resources.account !== undefined) out.push(`--account=${resources.account}`);
  if (resources.qos !== undefined) out.push(`--qos=${resources.qos}`);
  out.push(...request.schedulerOptions);
  return out;
}

/**
 * The Slurm backend: sbatch, squeue, sacct and scancel through the profile's transport
 * (this machine when the profile has no host, a login node over SSH when it has one).
 */
export function createSlurmBackend(): BackendV1 {
  const slurm = (
    context: BackendContextV1,
    profile: Profile,
    argv: readonly string[],
    timeoutMs = QUERY_TIMEOUT_MS,
    input?: string,
  ): Promise<RunResultV1> =>
    context.transport.runScript(RUN_SLURM_COMMAND, [options(profile).binDir ?? '', ...argv], {
      timeoutMs,
      ...(input === undefined ? {} : { input }),
    });

  const probe = (
    profile: Profile,
    context: BackendContextV1,
    fresh: boolean,
  ): Promise<ProbeReportV1> =>
    cachedProbe(
      context.stateDirectory,
      `slurm|${context.transport.target}|${profile.host ?? ''}|${options(profile).binDir ?? ''}`,
      (options(profile).probeTtlSeconds ?? 3600) * 1000,
      fresh,
      () => runProbe(profile, context),
    );

  const runProbe = async (profile: Profile, context: BackendContextV1): Promise<ProbeReportV1> => {
    const problems: string[] = [];
    const facts: JsonObject = { transport: context.transport.target };
    const version = await slurm(context, profile, ['sbatch', '--version']).catch(
      (error: unknown) => error as Error,
    );
    if (version instanceof Error) {
      problems.push(`sbatch cannot be run: ${version.message}`);
    } else if (version.exitCode !== 0) {
      problems.push(`sbatch --version failed: ${failure(version)}`);
    } else {
      const parsed = parseSlurmVersion(version.stdout);
      if (!parsed)
        problems.push(
          `unrecognised sbatch --version output: ${JSON.stringify(version.stdout.slice(0, 200))}`,
        );
      else {
        facts.slurmVersion = parsed.text;
        if (
          parsed.major < MIN_SLURM_VERSION.major ||
          (parsed.major === MIN_SLURM_VERSION.major && parsed.minor < MIN_SLURM_VERSION.minor)
        ) {
          problems.push(
            `Slurm ${parsed.text} is older than 22.05, the oldest this backend supports`,
          );
        }
      }
    }
    if (problems.length === 0) {
      const home = await context.transport.runScript('printf "%s" "$HOME"', [], {
        timeoutMs: QUERY_TIMEOUT_MS,
      });
      if (home.exitCode === 0 && home.stdout.startsWith('/')) facts.home = home.stdout;
      else if (!profile.workdir)
        problems.push('the remote $HOME is not an absolute path: set a workdir (--workdir)');
      const config = await slurm(context, profile, ['scontrol', 'show', 'config']).catch(
        (error: unknown) => error as Error,
      );
      if (config instanceof Error || config.exitCode !== 0) {
        problems.push(
          `slurmctld does not answer (scontrol show config): ${config instanceof Error ? config.message : failure(config)}`,
        );
      } else {
        facts.minJobAgeSeconds = parseMinJobAge(config.stdout);
      }
      const accounting = await slurm(context, profile, [
        'sacct',
        '--noheader',
        '--parsable2',
        '--allocations',
        '--starttime=now-1minutes',
        '--endtime=now',
        '--format=JobIDRaw',
      ]).catch((error: unknown) => error as Error);
      facts.accounting = !(accounting instanceof Error) && accounting.exitCode === 0;
      if (!facts.accounting) {
        problems.push(
          `Slurm accounting (sacct) does not work: ${accounting instanceof Error ? accounting.message : failure(accounting)}. Jobs that leave squeue cannot be resolved.`,
        );
      }
    }
    return { ok: problems.length === 0, facts, problems };
  };

  /** Look jobs up by their Slurm job names (for interrupted submits). */
  const findByName = async (
    context: BackendContextV1,
    profile: Profile,
    names: readonly string[],
    since: string,
  ): Promise<Map<string, { id: string; state: string }>> => {
    const found = new Map<string, { id: string; state: string }>();
    for (const chunk of chunks(names, CHUNK)) {
      const queue = await slurm(context, profile, [
        'squeue',
        '--noheader',
        '--all',
        '--states=all',
        `--name=${chunk.join(',')}`,
        '--format=%A|%i|%T|%j|%k|%r',
      ]);
      if (queue.exitCode !== 0 || /slurm_load_jobs error/.test(queue.stderr))
        throw unavailable('squeue', queue);
      for (const row of parseSqueue(queue.stdout))
        found.set(row.name, { id: row.jobId, state: row.state });
      const missing = chunk.filter((name) => !found.has(name));
      if (missing.length === 0) continue;
      const accounting = await slurm(context, profile, [
        'sacct',
        '--noheader',
        '--parsable2',
        '--allocations',
        `--starttime=${slurmTime(since)}`,
        '--endtime=now',
        `--name=${missing.join(',')}`,
        '--format=JobIDRaw,JobID,JobName,State,ExitCode,Comment',
      ]);
      if (accounting.exitCode !== 0) throw unavailable('sacct', accounting);
      for (const row of parseSacct(accounting.stdout))
        if (!found.has(row.name)) found.set(row.name, { id: row.jobId, state: row.state });
    }
    return found;
  };

  /** The sbatch arguments, payload and Slurm job name of one request (or why it cannot be sent). */
  const prepare = (request: SubmitRequestV1, report: ProbeReportV1) => {
    const workdir = workdirOf(request.profile, report);
    const reserved = request.schedulerOptions.find(isReservedOption);
    if (reserved) {
      return new YonderError(
        'E_INVALID_JOB_SPEC',
        `schedulerOptions: "${reserved}" is set by yonder itself; use the job's name, cwd and resources instead.`,
      );
    }
    const jobName = slurmJobName(request.id, request.name);
    const { input, lengths } = jobPayload(request.env, request.secrets, request.settingsText);
    const sbatch = sbatchOptions(request, jobName);
    const argv =
      request.settingsText === undefined
        ? [...request.argv]
        : replacePlaceholder(request.argv, 'settings', `${workdir}/${request.id}/settings.json`);
    const args = [
      workdir,
      request.id,
      lengths,
      BATCH_SCRIPT,
      String(sbatch.length),
      ...sbatch,
      ...argv,
    ];
    return { jobName, input, args };
  };

  /** What sbatch answered for one job. */
  const outcomeOf = async (
    request: SubmitRequestV1,
    jobName: string,
    status: number,
    out: string,
    err: string,
    context: BackendContextV1,
  ): Promise<SubmitResultV1> => {
    if (status !== 0) {
      const message = sbatchFailure(err || out);
      if (status === 17 || status === 19) throw new YonderError('E_SUBMIT_FAILED', message);
      if (isTransientSbatchFailure(err))
        throw new YonderError('E_SCHEDULER_UNAVAILABLE', `sbatch: ${message}`);
      throw new YonderError('E_SUBMIT_FAILED', `Slurm refused the job: ${message}`);
    }
    const jobDir = outputField(out, 'DIR');
    const answer = parseSbatchId(withoutField(out, 'DIR'));
    if (!answer || !jobDir)
      throw new YonderError(
        'E_TRANSPORT',
        `sbatch gave no job id: ${JSON.stringify(out.slice(-300))}`,
      );
    const { id } = parseExternalId(answer.id);
    if (answer.cluster !== null) {
      const cluster = parseExternalId(answer.cluster).id;
      const cancelled = await slurm(
        context,
        request.profile,
        ['scancel', `--clusters=${cluster}`, id],
        CANCEL_TIMEOUT_MS,
      ).catch((error: unknown) => error as Error);
      const outcome =
        cancelled instanceof Error
          ? cancelled.message
          : cancelled.exitCode === 0
            ? 'it was cancelled'
            : failure(cancelled);
      throw new YonderError(
        'E_SUBMIT_FAILED',
        `sbatch answered with job ${id} on cluster ${cluster}; multi-cluster submission is not supported, so ${outcome}. Remove --clusters/-M from the options.`,
      );
    }
    const data: SlurmJobData = {
      jobDir,
      log: `${jobDir}/job.log`,
      jobName,
      marker: request.marker,
      cluster: null,
    };
    return { externalId: id, state: 'pending', nativeState: 'PENDING', data };
  };

  /** Submit jobs of one target in one remote command: one SSH round trip for the lot. */
  const submitMany = async (
    requests: readonly SubmitRequestV1[],
    context: BackendContextV1,
  ): Promise<Array<SubmitResultV1 | { error: YonderError }>> => {
    const first = requests[0];
    if (!first) return [];
    const report = await probe(first.profile, context, false);
    if (!report.ok) {
      const error = new YonderError(
        'E_SCHEDULER_UNAVAILABLE',
        `Slurm is not usable here: ${report.problems.join('; ')}`,
      );
      return requests.map(() => ({ error }));
    }
    const prepared = requests.map((request) => prepare(request, report));
    const sendable = prepared.flatMap((entry, index) =>
      entry instanceof YonderError ? [] : [{ index, entry }],
    );
    const args: string[] = [options(first.profile).binDir ?? '', String(sendable.length), '0'];
    let input = '';
    for (const { entry } of sendable) {
      args.push(String(entry.args.length), String(Buffer.byteLength(entry.input)), ...entry.args);
      input += entry.input;
    }
    args[2] = String(Buffer.byteLength(input));
    const outcomes: Array<SubmitResultV1 | { error: YonderError }> = prepared.map((entry) =>
      entry instanceof YonderError
        ? { error: entry }
        : { error: new YonderError('E_TRANSPORT', 'sbatch gave no answer for this job.') },
    );
    if (sendable.length === 0) return outcomes;
    const result = await context.transport.runScript(SUBMIT_SCRIPT, args, {
      input,
      timeoutMs: SUBMIT_TIMEOUT_MS * Math.max(1, Math.ceil(sendable.length / 20)),
    });
    const status = new Map<number, number>();
    const out = new Map<number, string>();
    const err = new Map<number, string>();
    for (const line of result.stdout.split('\n')) {
      const match = /^(JOB|OUT|ERR) (\d+) ?(.*)$/s.exec(line);
      if (!match) continue;
      const job = Number(match[2]);
      if (match[1] === 'JOB') status.set(job, Number(match[3]));
      else {
        const into = match[1] === 'OUT' ? out : err;
        into.set(job, `${into.get(job) ?? ''}${match[3]}\n`);
      }
    }
    for (const [position, { index, entry }] of sendable.entries()) {
      const code = status.get(position);
      const request = requests[index] as SubmitRequestV1;
      if (code === undefined) {
        outcomes[index] = {
          error: new YonderError(
            'E_TRANSPORT',
            `The submit script stopped before this job: ${failure(result)}`,
          ),
        };
        continue;
      }
      try {
        outcomes[index] = await outcomeOf(
          request,
          entry.jobName,
          code,
          out.get(position) ?? '',
          err.get(position) ?? '',
          context,
        );
      } catch (error) {
        outcomes[index] = { error: error as YonderError };
      }
    }
    return outcomes;
  };

  const backend: BackendV1 = {
    specificationVersion: 'v1',
    id: SLURM_BACKEND_ID,
    capabilities: {
      resources: ['time', 'cpus', 'memory', 'gpus', 'nodes', 'partition', 'account', 'qos'],
      schedulerOptions: true,
      host: 'optional',
      recoverSubmit: true,
      logs: true,
      submitGraceSeconds: SLURM_SUBMIT_GRACE_SECONDS,
      transport: 'ssh',
    },
    optionsSchema: SlurmOptionsSchema,

    validateProfile(profile) {
      const issues: ValidationIssue[] = [];
      const binDir = options(profile).binDir;
      if (binDir !== undefined) issues.push(...checkAbsolutePath(binDir, 'options.binDir'));
      if (profile.workdir?.includes('\\')) {
        issues.push({
          path: 'workdir',
          message: 'may not contain "\\" (Slurm reads it in output file names)',
        });
      }
      if (profile.workdir?.includes('%')) {
        issues.push({
          path: 'workdir',
          message: 'may not contain "%" (Slurm reads it as a file name pattern)',
        });
      }
      return issues;
    },

    targetKey(profile) {
      return `slurm:${profile.host ?? 'local'}:${options(profile).binDir ?? ''}`;
    },

    probe: (profile, context) => probe(profile, context, true),

    async submit(request, context) {
      const [outcome] = await submitMany([request], context);
      if (!outcome || 'error' in outcome)
        throw outcome?.error ?? new YonderError('E_TRANSPORT', 'sbatch gave no answer.');
      return outcome;
    },

    submitMany: (requests, context) => submitMany(requests, context),

    async recover(requests, context) {
      const out = new Map<string, SubmitResultV1 | null>();
      const first = requests[0];
      if (!first) return out;
      const since = earliest(requests.map((request) => request.createdAt));
      const names = requests.map((request) => slurmJobName(request.id, request.name));
      const report = await probe(first.profile, context, false);
      const found = await findByName(
        context,
        first.profile,
        names,
        new Date(Date.parse(since) - 86_400_000).toISOString(),
      );
      requests.forEach((request, index) => {
        const name = names[index] as string;
        const hit = found.get(name);
        if (hit) {
          const jobDir = `${workdirOf(request.profile, report)}/${request.id}`;
          const data: SlurmJobData = {
            jobDir,
            log: `${jobDir}/job.log`,
            jobName: name,
            marker: request.marker,
            cluster: null,
          };
          out.set(request.id, {
            externalId: parseExternalId(hit.id).id,
            state: 'pending',
            nativeState: hit.state,
            data,
          });
        } else if (Date.now() - Date.parse(request.createdAt) > SLURM_SUBMIT_GRACE_SECONDS * 1000) {
          out.set(request.id, null);
        }
      });
      return out;
    },

    async poll(jobs, context) {
      const out = new Map<string, ObservationV1>();
      const first = jobs[0];
      if (!first) return out;
      const profile = first.profile;
      const queue = await slurm(context, profile, [
        'squeue',
        '--me',
        '--all',
        '--noheader',
        '--array',
        '--states=all',
        '--format=%A|%i|%T|%j|%k|%r',
      ]);
      if (queue.exitCode !== 0 || /slurm_load_jobs error/.test(queue.stderr))
        throw unavailable('squeue', queue);
      const rows = new Map<string, SqueueRow>();
      for (const row of parseSqueue(queue.stdout))
        if (row.jobId === row.displayId || !rows.has(row.jobId)) rows.set(row.jobId, row);
      const needAccounting: BackendJobV1[] = [];
      for (const job of jobs) {
        const row = job.externalId ? rows.get(job.externalId) : undefined;
        const name = String(job.data.jobName ?? '');
        if (row && row.name === name) {
          const observation = slurmObservation(row.state, 'squeue', { reason: row.reason });
          // squeue has no exit code: ask accounting for finished jobs.
          if (
            observation.state === 'succeeded' ||
            observation.state === 'failed' ||
            observation.state === 'cancelled'
          )
            needAccounting.push(job);
          else out.set(job.id, observation);
        } else {
          needAccounting.push(job);
        }
      }
      if (needAccounting.length === 0) return out;
      const since = earliest(needAccounting.map((job) => job.createdAt));
      for (const chunk of chunks(needAccounting, CHUNK)) {
        const ids = chunk.map((job) => job.externalId).filter((id): id is string => id !== null);
        const accounting = await slurm(context, profile, [
          'sacct',
          '--noheader',
          '--parsable2',
          '--allocations',
          `--starttime=${slurmTime(new Date(Date.parse(since) - 86_400_000).toISOString())}`,
          '--endtime=now',
          `--jobs=${ids.join(',')}`,
          '--format=JobIDRaw,JobID,JobName,State,ExitCode,Comment',
        ]);
        const byId = new Map<string, SacctRow>();
        if (accounting.exitCode === 0)
          for (const row of parseSacct(accounting.stdout)) byId.set(row.jobId, row);
        for (const job of chunk) {
          out.set(
            job.id,
            reconcile(job, rows, accounting.exitCode === 0 ? byId : null, accounting),
          );
        }
      }
      await addExitCodes(context, needAccounting, out);
      return out;
    },

    async cancel(jobs, context) {
      const out = new Map<string, CancelOutcomeV1>();
      const first = jobs[0];
      if (!first) return out;
      for (const chunk of chunks(
        jobs.filter((job) => job.externalId !== null),
        100,
      )) {
        const result = await slurm(
          context,
          first.profile,
          ['scancel', ...chunk.map((job) => job.externalId as string)],
          CANCEL_TIMEOUT_MS,
        );
        const errors = new Map<string, string>();
        for (const match of result.stderr.matchAll(/Kill job error on job id (\S+): (.*)/g))
          errors.set(match[1] as string, match[2] as string);
        for (const job of chunk) {
          const error = errors.get(job.externalId as string);
          if (error || (result.exitCode !== 0 && errors.size === 0)) {
            out.set(job.id, {
              kind: 'failed',
              error: {
                code: 'E_CANCEL_FAILED',
                message: `scancel ${job.externalId}: ${error ?? failure(result)}`,
              },
            });
          } else {
            out.set(job.id, { kind: 'sent' });
          }
        }
      }
      return out;
    },

    async readLog(job, readOptions, context): Promise<LogChunkV1> {
      return readRemoteLog(
        context.transport,
        String(job.data.log ?? ''),
        readOptions,
        job.state === 'pending'
          ? 'The job has not started yet: Slurm creates its log when it starts.'
          : `The log ${String(job.data.log)} does not exist (yet).`,
      );
    },
  };
  return backend;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * Replace sacct's exit codes with the ones the job wrapper recorded: sacct (up to 25.05)
 * shows an exit status of 128 or more reduced by 128, so `exit 137` would read as 9.
 * One remote command for every job that finished in this poll; if it fails, sacct's stand.
 */
async function addExitCodes(
  context: BackendContextV1,
  jobs: readonly BackendJobV1[],
  observations: Map<string, ObservationV1>,
): Promise<void> {
  const finished = jobs.filter((job) => {
    const observation = observations.get(job.id);
    return (
      observation?.kind === 'found' &&
      (observation.state === 'failed' || observation.state === 'succeeded') &&
      job.data.jobDir
    );
  });
  if (finished.length === 0) return;
  let result: RunResultV1;
  try {
    result = await context.transport.runScript(
      EXIT_CODES_SCRIPT,
      finished.map((job) => String(job.data.jobDir)),
      { timeoutMs: QUERY_TIMEOUT_MS },
    );
  } catch {
    return;
  }
  const codes = parseExitCodes(result.stdout);
  for (const job of finished) {
    const code = codes.get(String(job.data.jobDir));
    const observation = observations.get(job.id);
    if (code === undefined || observation?.kind !== 'found') continue;
    const exact = exitObservation(code, observation.source);
    if (exact.kind !== 'found') continue;
    observations.set(job.id, {
      ...observation,
      exitCode: code,
      signal: exact.signal ?? observation.signal ?? null,
      reason:
        observation.state === 'failed' &&
        observation.failureKind === 'application' &&
        !['timeout', 'out-of-memory', 'deadline'].includes(observation.reason ?? '')
          ? (exact.reason ?? null)
          : (observation.reason ?? null),
    });
  }
}

/**
 * One job's observation from squeue's rows and sacct's (null when sacct failed). squeue is
 * authoritative for live jobs, sacct for finished ones (it has the exit code); a record whose
 * name is not the one yonder gave the job is not ours.
 */
export function reconcile(
  job: BackendJobV1,
  queue: ReadonlyMap<string, SqueueRow>,
  accounting: ReadonlyMap<string, SacctRow> | null,
  accountingResult?: RunResultV1,
): ObservationV1 {
  const name = String(job.data.jobName ?? '');
  const id = job.externalId ?? '';
  const queuedRow = queue.get(id);
  const queued = queuedRow && queuedRow.name === name ? queuedRow : undefined;
  const fromQueue = queued
    ? slurmObservation(queued.state, 'squeue', { reason: queued.reason })
    : undefined;
  if (fromQueue && !TERMINAL.has(fromQueue.state)) return fromQueue;
  if (accounting === null) {
    if (fromQueue?.state === 'succeeded') return fromQueue;
    return {
      kind: 'query-failed',
      source: 'sacct',
      error: accountingResult
        ? unavailable('sacct', accountingResult).toJSON()
        : { code: 'E_SCHEDULER_UNAVAILABLE', message: 'sacct failed' },
    };
  }
  const named = accounting.get(id);
  // Right after a job ends, sacct can show its record under the name "allocation" for a moment:
  // while squeue vouches for the job, a sacct row with another name is lag, not another job.
  if (named && named.name !== name && !queued) {
    return {
      kind: 'absent',
      source: 'sacct',
      detail: `Slurm job ${id} is named ${named.name}, not ${name}: not this job`,
    };
  }
  const row = named && named.name === name ? named : undefined;
  const fromAccounting = row
    ? slurmObservation(row.state, 'sacct', { exitCode: row.exitCode })
    : undefined;
  if (fromAccounting && TERMINAL.has(fromAccounting.state)) return fromAccounting;
  if (fromQueue) {
    // Finished in squeue, not yet in accounting (it lags by a second or so).
    if (fromQueue.state === 'succeeded') return fromQueue;
    return {
      kind: 'query-failed',
      source: 'sacct',
      error: {
        code: 'E_SCHEDULER_UNAVAILABLE',
        message: 'waiting for accounting to record the finished job',
      },
    };
  }
  return {
    kind: 'absent',
    source: 'sacct',
    detail: row
      ? `accounting says ${row.state} but squeue no longer lists the job`
      : 'neither squeue nor sacct knows the job',
  };
}
