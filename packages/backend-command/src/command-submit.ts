/** Submit through a command profile: one remote command checks the working directory, prepares the job's directory and script, and runs the submit template. */
import {
  type BackendContextV1,
  type JsonObject,
  type ProbeReportV1,
  type SubmitRequestV1,
  type SubmitResultV1,
  YonderError,
} from '@yonder/core';
import {
  JOB_WRAPPER_SCRIPT,
  jobPayload,
  outputField,
  PREPARE_JOB_DIRECTORY,
  parseExternalId,
  shJoin,
  shQuote,
  TRUSTED_PROGRAM_FUNCTIONS,
  withoutField,
} from '@yonder/core/backend-kit';
import type { CommandOptions } from './command-options.js';
import { commandFailure, parsedTemplates, renderCommand } from './command-templates.js';
import { extractId } from './parse-status.js';

/** SUBMIT_SCRIPT's `CWD <problem>` line for a working directory that cannot be used, and what each means. */
const CWD_PROBLEMS: ReadonlyMap<string, string> = new Map([
  ['missing', 'does not exist on the target'],
  ['not-directory', 'is not a directory on the target'],
  ['no-entry', 'cannot be entered on the target (no search permission)'],
]);

/**
 * Check the job's working directory, prepare the job directory, write the job script, then
 * run the submit command, all in one remote command. Arguments: $1 work directory (empty:
 * $HOME/.yonder/command), $2 job id, $3 payload lengths, $4 job script text, $5 the working
 * directory asked for (empty: none), then the rendered submit command. A working directory that
 * cannot be used prints `CWD <problem>` (CWD_PROBLEMS) and exits 20; a submit program another
 * user could change (the trust rule, `trusted_program`) is refused on stderr, exit 23; one that
 * is not there, 127: nothing was made or run.
 */
const SUBMIT_SCRIPT = `set -u
w=$1; id=$2; lengths=$3; script=$4; cwd=$5; shift 5
if [ -n "$cwd" ]; then
  [ -e "$cwd" ] || { echo 'CWD missing'; exit 20; }
  [ -d "$cwd" ] || { echo 'CWD not-directory'; exit 20; }
  (cd -- "$cwd") 2>/dev/null || { echo 'CWD no-entry'; exit 20; }
fi
${TRUSTED_PROGRAM_FUNCTIONS}
trusted_program "$1" 'program of options.submit'
case $? in 0) ;; 127) exit 127 ;; *) exit 23 ;; esac
program=$tp_path; shift
fallback="$HOME/.yonder/command"
${PREPARE_JOB_DIRECTORY}
printf '%s' "$script" > "$d/job.sh"
chmod 700 "$d/job.sh"
: > "$d/job.log"
printf 'DIR %s\\n' "$d"
"$program" "$@"
rc=$?
if [ "$rc" -ne 0 ]; then rm -rf -- "$d"; fi
exit "$rc"
`;

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
 * Submit one job with the profile's submit template, once the probe found the target usable.
 * @throws YonderError `E_SUBMIT_REFUSED` when the working directory cannot be used; `E_SUBMIT_FAILED` when the submit
 *   command failed or printed no job id (nothing is left behind on the target).
 */
export async function commandSubmit(
  request: SubmitRequestV1,
  context: BackendContextV1<CommandOptions>,
  report: ProbeReportV1,
): Promise<SubmitResultV1> {
  const { options } = context;
  const templates = parsedTemplates(options);
  const workdir = request.profile.workdir ?? `${String(report.facts.home)}/.yonder/command`;
  const jobDir = `${workdir}/${request.id}`;
  const settingsPath = `${jobDir}/settings.json`;
  const argv =
    request.settingsText === undefined
      ? [...request.argv]
      : request.argv.map((word) => word.split('{settings}').join(settingsPath));
  const settingsText =
    request.settingsText ?? (templates.submit.placeholders.has('settings') ? '{}\n' : undefined);
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
    [
      workdir,
      request.id,
      lengths,
      jobScript(jobDir, request.cwd ?? jobDir, argv),
      request.cwd ?? '',
      ...command,
    ],
    { input, timeoutMs: (options.timeoutSeconds ?? 120) * 1000 },
  );
  const cwdProblem = CWD_PROBLEMS.get(outputField(result.stdout, 'CWD') ?? '');
  if (result.exitCode === 20 && cwdProblem !== undefined)
    throw new YonderError(
      'E_SUBMIT_REFUSED',
      `cwd: the job's working directory ${request.cwd} ${cwdProblem}; nothing was submitted.`,
    );
  if (result.exitCode !== 0)
    throw new YonderError(
      'E_SUBMIT_FAILED',
      `The submit command failed: ${commandFailure(result)}`,
    );
  const output = withoutField(result.stdout, 'DIR');
  const raw = extractId(output, options.idPattern);
  if (!raw) {
    throw new YonderError(
      'E_SUBMIT_FAILED',
      `The submit command printed no job id${options.idPattern ? ' matching options.idPattern' : ''}: ${JSON.stringify(output.slice(0, 300))}`,
    );
  }
  const externalId = parseExternalId(raw).id;
  const data: JsonObject = { jobDir, log: `${jobDir}/job.log` };
  return { externalId, state: 'pending', nativeState: 'submitted', data };
}
