/** Submit: many jobs of one target in one remote command that prepares each job's directory and runs sbatch. */
import {
  type BackendContextV1,
  getErrorMessage,
  type JsonObject,
  type ProbeReportV1,
  type SubmitRequestV1,
  type SubmitResultV1,
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
import { BATCH_SCRIPT, CWD_PROBLEMS, SUBMIT_SCRIPT } from './scripts.js';
import { CANCEL_TIMEOUT_MS, commandFailure, slurmCommand } from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';
import { slurmProbe, slurmWorkdir } from './slurm-probe.js';

/** SUBMIT_ONE's exit statuses for a container it refused (container_check). */
const CONTAINER_REFUSED = new Set([30, 31, 32]);
/** How long sbatch may take for up to 20 jobs (the batch gets this per 20). */
const SUBMIT_TIMEOUT_MS = 180_000;

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
 * Submit jobs of one target in one remote command: one SSH round trip for the lot. One outcome
 * per request, in order: its result, or the error that job met.
 */
export async function slurmSubmit(
  requests: readonly SubmitRequestV1[],
  context: BackendContextV1<SlurmOptions>,
): Promise<SubmitOutcome[]> {
  const first = requests[0];
  if (!first) return [];
  const { options } = context;
  const report = await slurmProbe(first.profile, options, context, false);
  if (!report.ok) {
    const error = new YonderError(
      'E_SCHEDULER_UNAVAILABLE',
      `Slurm is not usable here: ${report.problems.join('; ')}`,
    );
    return requests.map(() => ({ error }));
  }
  const prepared = requests.map((request) => prepare(request, options, report));
  const sendable = prepared.flatMap((entry, index) =>
    YonderError.isInstance(entry) ? [] : [{ index, entry }],
  );
  const args: string[] = [options.binDir ?? '', String(sendable.length), '0'];
  let input = '';
  for (const { entry } of sendable) {
    args.push(String(entry.args.length), String(Buffer.byteLength(entry.input)), ...entry.args);
    input += entry.input;
  }
  args[2] = String(Buffer.byteLength(input));
  const outcomes: SubmitOutcome[] = prepared.map((entry) =>
    YonderError.isInstance(entry)
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
          `The submit script stopped before this job: ${commandFailure(result)}`,
        ),
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
  return outcomes;
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
    BATCH_SCRIPT,
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
