/** Submit: many jobs of one target, in parts of bounded size, each part one remote command that prepares each job's directory and runs sbatch. */
import {
  type BackendContextV1,
  getErrorMessage,
  type JsonObject,
  type ProbeReportV1,
  type RunResultV1,
  type SubmitRequestV1,
  type SubmitResultV1,
  toYonderError,
  ValidationError,
  YonderError,
} from '@yonder/core';
import {
  jobPayload,
  outputField,
  parseExternalId,
  replacePlaceholder,
  requestLaunch,
  withoutField,
} from '@yonder/core/backend-kit';
import { isTransientSbatchFailure, parseSbatchId, sbatchFailure } from './parse.js';
import { sbatchOptions, schedulerOptionIssues, slurmJobName } from './sbatch-options.js';
import { CWD_PROBLEMS, SUBMIT_SCRIPT } from './scripts.js';
import { CANCEL_TIMEOUT_MS, commandFailure, slurmCommand } from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';
import { slurmProbe, slurmWorkdir, submitBlockers } from './slurm-probe.js';

/** SUBMIT_ONE's exit statuses for a container it refused (container_check). */
const CONTAINER_REFUSED = new Set([30, 31, 32]);
/** How long sbatch may take for up to 20 jobs (the batch gets this per 20). */
const SUBMIT_TIMEOUT_MS = 180_000;
/** At most this many jobs in one remote command. */
export const SUBMIT_PART_JOBS = 200;
/** At most this many bytes of the jobs' arguments in one remote command (a larger job alone). */
export const SUBMIT_PART_BYTES = 256 * 1024;

/** What the backend keeps with a Slurm job (`data`), handed back on every later call. */
export interface SlurmJobData extends JsonObject {
  jobDir: string;
  log: string;
  jobName: string;
  marker: string;
  cluster: string | null;
}

/** The data of a job whose directory is `jobDir` (its log is `job.log` there). */
export function slurmJobData(jobDir: string, jobName: string, marker: string): SlurmJobData {
  return { jobDir, log: `${jobDir}/job.log`, jobName, marker, cluster: null };
}

type SubmitOutcome = SubmitResultV1 | { error: YonderError };

/**
 * Submit jobs of one target: one remote command (one SSH round trip) per part of at most
 * SUBMIT_PART_JOBS jobs and SUBMIT_PART_BYTES of arguments. One outcome per request, in
 * order: its result, or the error that job met (`E_SUBMIT_FAILED`/`E_SUBMIT_REFUSED` when it
 * certainly was not submitted, `E_TRANSPORT`/`E_TIMEOUT` when that is not known). Once a part
 * gets no answer, or the context's signal is aborted, no further part is sent.
 */
export async function slurmSubmit(
  requests: readonly SubmitRequestV1[],
  context: BackendContextV1<SlurmOptions>,
): Promise<SubmitOutcome[]> {
  const first = requests[0];
  if (!first) return [];
  const { options } = context;
  const report = await slurmProbe(first.profile, options, context, false);
  const blockers = submitBlockers(report);
  if (blockers.length > 0) {
    const error = new YonderError(
      'E_SCHEDULER_UNAVAILABLE',
      `Slurm is not usable here: ${blockers.join('; ')}`,
    );
    return requests.map(() => ({ error }));
  }
  const prepared = requests.map((request) => prepare(request, options, report));
  const outcomes: SubmitOutcome[] = prepared.map((entry) =>
    YonderError.isInstance(entry)
      ? { error: entry }
      : { error: new YonderError('E_TRANSPORT', 'sbatch gave no answer for this job.') },
  );
  const sendable = prepared.flatMap((entry, index) =>
    YonderError.isInstance(entry) ? [] : [{ index, entry }],
  );
  // The batch goes in parts, one remote command each: a command line is bounded by the
  // system (Linux: 2 MiB for all arguments), and a part that failed is told apart from the
  // parts that were never sent.
  let stopped: YonderError | null = null;
  for (const part of submitParts(sendable)) {
    if (stopped === null && context.signal?.aborted)
      stopped = new YonderError(
        'E_SUBMIT_FAILED',
        'the submit was interrupted before this job was sent; nothing was submitted.',
      );
    if (stopped !== null) {
      for (const { index } of part) outcomes[index] = { error: stopped };
      continue;
    }
    stopped = await submitPart(part, requests, outcomes, options, context);
  }
  return outcomes;
}

/** A job ready to send: its place among the requests, and what `prepare` made of it. */
interface Sendable {
  readonly index: number;
  readonly entry: Prepared;
}

type Prepared = Exclude<ReturnType<typeof prepare>, YonderError>;

/** The bytes a job's arguments take on a command line (each with its terminating NUL). */
function argumentBytes(entry: Prepared): number {
  return entry.args.reduce((sum, arg) => sum + Buffer.byteLength(arg) + 1, 0);
}

/**
 * The jobs in parts of at most SUBMIT_PART_JOBS jobs and SUBMIT_PART_BYTES of arguments (a
 * job larger than that alone).
 */
function submitParts(sendable: readonly Sendable[]): Sendable[][] {
  const parts: Sendable[][] = [];
  let part: Sendable[] = [];
  let bytes = 0;
  for (const item of sendable) {
    const size = argumentBytes(item.entry);
    if (part.length > 0 && (part.length >= SUBMIT_PART_JOBS || bytes + size > SUBMIT_PART_BYTES)) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(item);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/**
 * Submit one part in one remote command, setting each of its jobs' outcomes. Returns why the
 * parts after it are not to be sent (the command did not come back, so whether the target is
 * still reachable is not known), else null. A job the command never came to (no START line in
 * an answer that came back whole, or a command that could not be started) was not submitted;
 * one it was working on when its answer was lost has an unknown outcome.
 */
async function submitPart(
  part: readonly Sendable[],
  requests: readonly SubmitRequestV1[],
  outcomes: SubmitOutcome[],
  options: SlurmOptions,
  context: BackendContextV1<SlurmOptions>,
): Promise<YonderError | null> {
  const args: string[] = [options.binDir ?? '', String(part.length), '0'];
  let input = '';
  for (const { entry } of part) {
    args.push(String(entry.args.length), String(Buffer.byteLength(entry.input)), ...entry.args);
    input += entry.input;
  }
  args[2] = String(Buffer.byteLength(input));
  let result: RunResultV1 | null = null;
  let failure: YonderError | null = null;
  try {
    result = await context.transport.runScript(SUBMIT_SCRIPT, args, {
      input,
      timeoutMs: SUBMIT_TIMEOUT_MS * Math.max(1, Math.ceil(part.length / 20)),
    });
  } catch (error) {
    failure = toYonderError(error, 'E_TRANSPORT');
  }
  // Arguments too long for the system (a job with an argument past 128 KiB, say): nothing ran,
  // so the part is sent again in halves, until the job that is too long is alone.
  const tooLong = tooLongFor(failure, result);
  if (tooLong !== null) {
    if (part.length > 1) {
      const half = Math.ceil(part.length / 2);
      return (
        (await submitPart(part.slice(0, half), requests, outcomes, options, context)) ??
        (await submitPart(part.slice(half), requests, outcomes, options, context))
      );
    }
    const only = part[0] as Sendable;
    outcomes[only.index] = {
      error: new YonderError(
        'E_SUBMIT_REFUSED',
        `the job's arguments (${Math.ceil(argumentBytes(only.entry) / 1024)} KiB) are too long for one command on the target (${tooLong}); nothing was submitted. Pass large values in a file or in settings.`,
      ),
    };
    return null;
  }
  if (result === null) {
    const unknown = failure ?? new YonderError('E_TRANSPORT', 'the submit command gave no answer');
    for (const { index } of part) outcomes[index] = { error: unknown };
    return new YonderError(
      'E_SUBMIT_FAILED',
      `not sent, since an earlier part of the batch got no answer (${unknown.message}); nothing was submitted.`,
    );
  }
  const started = new Set<number>();
  const status = new Map<number, number>();
  const out = new Map<number, string>();
  const err = new Map<number, string>();
  for (const line of result.stdout.split('\n')) {
    const match = /^(START|JOB|OUT|ERR) (\d+) ?(.*)$/s.exec(line);
    if (!match) continue;
    const job = Number(match[2]);
    if (match[1] === 'START') started.add(job);
    else if (match[1] === 'JOB') status.set(job, Number(match[3]));
    else {
      const into = match[1] === 'OUT' ? out : err;
      into.set(job, `${into.get(job) ?? ''}${match[3]}\n`);
    }
  }
  // Its whole answer came back unless the output was cut: a job with no START was never tried.
  const whole = result.exitCode !== null && !result.stdoutTruncated;
  for (const [position, { index, entry }] of part.entries()) {
    const code = status.get(position);
    const request = requests[index] as SubmitRequestV1;
    if (code === undefined) {
      const said = commandFailure(result);
      outcomes[index] = {
        error:
          whole && !started.has(position)
            ? new YonderError(
                'E_SUBMIT_FAILED',
                `the submit command ended before this job was tried (${said}); nothing was submitted.`,
              )
            : new YonderError('E_TRANSPORT', `The submit script stopped at this job: ${said}`),
      };
      continue;
    }
    try {
      outcomes[index] = await outcomeOf(
        request,
        entry.jobName,
        { status: code, out: out.get(position) ?? '', err: err.get(position) ?? '' },
        options,
        context,
      );
    } catch (error) {
      outcomes[index] = { error: error as YonderError };
    }
  }
  return null;
}

/**
 * What the system said when a command's arguments were too long for it (E2BIG: the command
 * never started here, or the far side's shell could not start it), else null.
 */
function tooLongFor(failure: YonderError | null, result: RunResultV1 | null): string | null {
  const cause = failure?.cause as NodeJS.ErrnoException | undefined;
  if (cause?.code === 'E2BIG') return 'Argument list too long';
  if (
    result !== null &&
    result.exitCode !== 0 &&
    !/^START /m.test(result.stdout) &&
    /Argument list too long/.test(result.stderr)
  )
    return 'Argument list too long';
  return null;
}

/** The sbatch arguments, payload and Slurm job name of one request (or why it cannot be sent). */
function prepare(request: SubmitRequestV1, options: SlurmOptions, report: ProbeReportV1) {
  const workdir = slurmWorkdir(request.profile, report);
  const refused = schedulerOptionIssues(request.schedulerOptions);
  if (refused.length > 0)
    return new ValidationError(
      'E_INVALID_JOB_SPEC',
      'sbatch cannot be given these options',
      refused,
    );
  const jobName = slurmJobName(request.id, request.name);
  const jobDir = `${workdir}/${request.id}`;
  const argv =
    request.settingsText === undefined
      ? [...request.argv]
      : replacePlaceholder(request.argv, 'settings', `${jobDir}/settings.json`);
  // In a container the job's variables and secrets take the runtime's way in, and its working
  // directory is inside the container: the batch script runs where sbatch starts it.
  const { launch, issues } = requestLaunch(request, { workdir, jobDir, argv });
  if (issues.length > 0)
    return new ValidationError(
      'E_SUBMIT_REFUSED',
      'The job cannot run in its container on this cluster',
      issues,
    );
  const { input, lengths } = jobPayload(
    launch?.env ?? request.env,
    launch?.secrets ?? request.secrets,
    request.settingsText,
  );
  const sbatch = sbatchOptions(request, jobName, options);
  const args = [
    workdir,
    request.id,
    lengths,
    launch ? '' : (request.cwd ?? ''),
    options.requeue ? '1' : '0',
    ...(launch ? launch.check : ['', '', '0']),
    String(sbatch.length),
    ...sbatch,
    ...(launch ? launch.args : argv),
  ];
  return { jobName, input, args };
}

/** What sbatch answered for one job: its exit status and its output lines. */
interface SbatchAnswer {
  readonly status: number;
  readonly out: string;
  readonly err: string;
}

/** The result of one job's submit from sbatch's answer, or the error it stands for. */
async function outcomeOf(
  request: SubmitRequestV1,
  jobName: string,
  { status, out, err }: SbatchAnswer,
  options: SlurmOptions,
  context: BackendContextV1,
): Promise<SubmitResultV1> {
  if (CONTAINER_REFUSED.has(status))
    throw new YonderError(
      'E_SUBMIT_REFUSED',
      `${(err.trim() || out.trim()).replace(/^yonder: /, '')}; nothing was submitted.`,
    );
  const cwdProblem = CWD_PROBLEMS[status];
  if (cwdProblem !== undefined)
    throw new YonderError(
      'E_SUBMIT_REFUSED',
      `cwd: the job's working directory ${request.cwd} ${cwdProblem}; nothing was submitted.`,
    );
  if (status !== 0) {
    const message = sbatchFailure(err || out);
    if (status === 17 || status === 19) throw new YonderError('E_SUBMIT_FAILED', message);
    if (isTransientSbatchFailure(err))
      throw new YonderError('E_SCHEDULER_UNAVAILABLE', `sbatch: ${message}`);
    throw new YonderError('E_SUBMIT_REFUSED', `Slurm refused the job: ${message}`);
  }
  const jobDir = outputField(out, 'DIR');
  const image = outputField(out, 'IMAGE')?.split(' ');
  const answer = parseSbatchId(withoutField(withoutField(out, 'DIR'), 'IMAGE'));
  if (!answer || !jobDir)
    throw new YonderError(
      'E_TRANSPORT',
      `sbatch gave no job id: ${JSON.stringify(out.slice(-300))}`,
    );
  const { id } = parseExternalId(answer.id);
  if (answer.cluster !== null) {
    const cluster = parseExternalId(answer.cluster).id;
    const cancelled = await slurmCommand(
      context,
      options,
      ['scancel', `--clusters=${cluster}`, id],
      CANCEL_TIMEOUT_MS,
    ).catch((error: unknown) => new Error(getErrorMessage(error)));
    const outcome =
      cancelled instanceof Error
        ? cancelled.message
        : cancelled.exitCode === 0
          ? 'it was cancelled'
          : commandFailure(cancelled);
    throw new YonderError(
      'E_SUBMIT_FAILED',
      `sbatch answered with job ${id} on cluster ${cluster}; multi-cluster submission is not supported, so ${outcome}. Remove --clusters/-M from the options.`,
    );
  }
  return {
    externalId: id,
    state: 'pending',
    nativeState: 'PENDING',
    data: slurmJobData(jobDir, jobName, request.marker),
    ...(image?.[0] ? { containerImage: { id: image[0], digest: image[1] || null } } : {}),
  };
}
