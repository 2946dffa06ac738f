/** Submit: one remote command per job that prepares its directory and runs qsub, shell-free. */
import {
  type BackendContextV1,
  type JsonObject,
  type SubmitRequestV1,
  type SubmitResultV1,
  ValidationError,
  type ValidationIssue,
  YonderError,
} from '@yonder/core';
import {
  commandFailure,
  jobPayload,
  outputField,
  replacePlaceholder,
  shJoin,
  timeLimitSeconds,
  withoutField,
} from '@yonder/core/backend-kit';
import { SUBMIT_TIMEOUT_MS } from './gridengine-command.js';
import type { GridEngineOptions } from './gridengine-options.js';
import { gridEngineProbe, gridEngineWorkdir } from './gridengine-probe.js';
import { parseQsubId, qmasterUnreachable } from './parse.js';
import { CWD_PROBLEMS, JOB_SCRIPT, SUBMIT_SCRIPT } from './scripts.js';

/** What the backend keeps with a Grid Engine job (`data`), handed back on every later call. */
export interface GridEngineJobData extends JsonObject {
  jobDir: string;
  log: string;
  jobName: string;
  marker: string;
}

/**
 * The Grid Engine job name: `yonder-<id>-<name>`, the job's identity on the cluster, with only
 * characters every Grid Engine tool keeps (no `/ : @ \ * ?`, spaces or line breaks).
 */
export function gridEngineJobName(id: string, name: string): string {
  const safe = name
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .replace(/^[-_.]+/, '')
    .slice(0, 40);
  return safe ? `yonder-${id}-${safe}` : `yonder-${id}`;
}

/** What yonder sets itself, and why a scheduler option may not set it again. */
const SETS_LOG = 'yonder sets the job’s log itself';
const REFUSED: Readonly<Record<string, string>> = {
  '-o': SETS_LOG,
  '-e': SETS_LOG,
  '-j': SETS_LOG,
  '-N': 'yonder names the job itself (it finds the job again by that name)',
  '-wd': 'use the job’s cwd',
  '-cwd': 'use the job’s cwd',
  '-b': 'yonder submits its own job script',
  '-S': 'yonder submits its own job script',
  '-shell': 'yonder submits its own job script',
  '-C': 'yonder submits its own job script',
  '-terse': 'yonder sets it itself to read the job id',
  '-sync': 'qsub would wait until the job has ended',
  '-now': 'qsub would wait for the job to start',
  '-clear': 'it would drop the options yonder sets',
  '-@': 'an options file could set anything',
  '-t': 'one yonder job is one Grid Engine job (array jobs are not supported)',
  '-tc': 'one yonder job is one Grid Engine job (array jobs are not supported)',
  '-v': 'yonder sets the job’s environment itself (use env)',
  '-V': 'yonder sets the job’s environment itself (use env)',
  '-verify': 'qsub would only check the job and submit nothing',
  '-w': 'qsub would only check the job (-w v, -w p) or refuse it by its own rules',
  '-help': 'qsub would print its usage and submit nothing',
};

/** Every refused word of a job's scheduler options, by its place (`schedulerOptions.2`). */
export function schedulerOptionIssues(words: readonly string[]): ValidationIssue[] {
  return words.flatMap((word, index) => {
    const why = REFUSED[word];
    return why === undefined
      ? []
      : [{ path: `schedulerOptions.${index}`, message: `"${word}" is refused: ${why}` }];
  });
}

/**
 * Why a path cannot be given to Grid Engine, or null: it expands `$HOME`, `$USER`, `$JOB_ID`…
 * in a working directory, and a line break ends an argument.
 */
export function pathProblem(path: string): string | null {
  if (path.includes('$'))
    return 'may not contain "$" (Grid Engine expands $HOME, $USER, $JOB_ID… in it)';
  if (/[\n\r]/.test(path)) return 'may not contain a line break (Grid Engine cuts it there)';
  return null;
}

/** qsub's options for the job's resources and name. */
export function qsubOptions(
  request: SubmitRequestV1,
  jobName: string,
  options: GridEngineOptions,
): string[] | ValidationError {
  const { resources } = request;
  const issues: ValidationIssue[] = schedulerOptionIssues(request.schedulerOptions);
  const out = ['-N', jobName];
  if (resources.time !== undefined) {
    const seconds = timeLimitSeconds(resources.time);
    if (seconds === null)
      issues.push({ path: 'resources.time', message: `"${resources.time}" is not a time limit` });
    else out.push('-l', `h_rt=${seconds}`);
  }
  if (resources.cpus !== undefined && resources.cpus > 1) {
    if (options.parallelEnvironment === undefined)
      issues.push({
        path: 'resources.cpus',
        message: `${resources.cpus} cpus need a parallel environment: set the profile's options.parallelEnvironment (qconf -spl lists them)`,
      });
    else out.push('-pe', options.parallelEnvironment, String(resources.cpus));
  }
  if (resources.partition !== undefined) out.push('-q', resources.partition);
  if (request.cwd !== undefined) {
    const problem = pathProblem(request.cwd);
    if (problem) issues.push({ path: 'cwd', message: problem });
  }
  if (issues.length > 0)
    return new ValidationError('E_INVALID_JOB_SPEC', 'qsub cannot be given this job', issues);
  out.push(...request.schedulerOptions);
  return out;
}

/**
 * Submit one job.
 * @throws YonderError `E_INVALID_JOB_SPEC` (options qsub may not get), `E_SUBMIT_REFUSED`
 *   (Grid Engine or the target refused it: nothing runs), `E_SUBMIT_FAILED`,
 *   `E_SCHEDULER_UNAVAILABLE` (the qmaster did not answer).
 */
export async function gridEngineSubmit(
  request: SubmitRequestV1,
  context: BackendContextV1<GridEngineOptions>,
): Promise<SubmitResultV1> {
  const { options } = context;
  const report = await gridEngineProbe(request.profile, options, context, false);
  if (!report.ok)
    throw new YonderError(
      'E_SCHEDULER_UNAVAILABLE',
      `Grid Engine is not usable here: ${report.problems.join('; ')}`,
    );
  const workdir = gridEngineWorkdir(request.profile, report);
  const jobName = gridEngineJobName(request.id, request.name);
  const qsub = qsubOptions(request, jobName, options);
  if (qsub instanceof ValidationError) throw qsub;
  const jobDir = `${workdir}/${request.id}`;
  const argv =
    request.settingsText === undefined
      ? [...request.argv]
      : replacePlaceholder(request.argv, 'settings', `${jobDir}/settings.json`);
  const { input, lengths } = jobPayload(request.env, request.secrets, request.settingsText);
  const result = await context.transport.runScript(
    SUBMIT_SCRIPT,
    [
      workdir,
      request.id,
      lengths,
      JOB_SCRIPT,
      `set -- ${shJoin(argv)}\n`,
      request.cwd ?? '',
      ...qsub,
    ],
    { input, timeoutMs: SUBMIT_TIMEOUT_MS },
  );
  const status = result.exitCode ?? -1;
  const cwdProblem = CWD_PROBLEMS[status];
  if (cwdProblem !== undefined)
    throw new YonderError(
      'E_SUBMIT_REFUSED',
      `cwd: the job's working directory ${request.cwd} ${cwdProblem}; nothing was submitted.`,
    );
  if (status === 17 || status === 18 || status === 19 || status === 23)
    throw new YonderError('E_SUBMIT_FAILED', commandFailure(result));
  if (status !== 0) {
    const message = commandFailure(result);
    if (qmasterUnreachable(message))
      throw new YonderError('E_SCHEDULER_UNAVAILABLE', `qsub: ${message}`);
    throw new YonderError('E_SUBMIT_REFUSED', `Grid Engine refused the job: ${message}`);
  }
  const dir = outputField(result.stdout, 'DIR');
  const id = parseQsubId(withoutField(result.stdout, 'DIR'));
  if (!id || !dir)
    throw new YonderError(
      'E_TRANSPORT',
      `qsub gave no job id: ${JSON.stringify(result.stdout.slice(-300))}`,
    );
  const data: GridEngineJobData = {
    jobDir: dir,
    log: `${dir}/job.log`,
    jobName,
    marker: request.marker,
  };
  return { externalId: id, state: 'pending', nativeState: 'qw', data };
}
