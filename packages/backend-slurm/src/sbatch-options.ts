/** What sbatch is told about a job: its name, its options, and the scheduler options yonder keeps for itself. */
import type { Resources, SubmitRequestV1, ValidationIssue } from '@yonder/core';
import type { SlurmOptions } from './slurm-options.js';

const SETS_LOG = 'yonder sets the job’s log itself';
const SETS_NAME = 'yonder names the job itself (it finds the job again by that name)';
const SETS_ENV =
  'yonder sets the job’s environment itself (use env, or the profile’s export option)';
const SETS_REQUEUE = 'use the profile’s requeue option';
const PRINTS_AND_EXITS = 'makes sbatch print something and exit without submitting';
const NO_CLUSTERS = 'multi-cluster submission is not supported';

/**
 * sbatch's long options that yonder refuses, and why: those it sets itself (passing them would
 * break the job's identity or files) and those that change submission itself (what sbatch does
 * or prints). `--hold` and everything else about the job's resources pass through.
 */
const REFUSED_LONG: Readonly<Record<string, string>> = {
  output: SETS_LOG,
  error: SETS_LOG,
  'open-mode': SETS_LOG,
  'job-name': SETS_NAME,
  comment: SETS_NAME,
  chdir: 'use the job’s cwd',
  export: SETS_ENV,
  'export-file': SETS_ENV,
  requeue: SETS_REQUEUE,
  'no-requeue': SETS_REQUEUE,
  parsable: 'yonder sets it itself to read the job id',
  wrap: 'it replaces the job’s own script',
  array: 'one yonder job is one Slurm job (job arrays are not supported)',
  'test-only': 'sbatch would only estimate a start time and submit nothing',
  wait: 'sbatch would wait until the job has ended',
  quiet: 'sbatch would not print the job id',
  clusters: NO_CLUSTERS,
  cluster: NO_CLUSTERS,
  uid: 'the job would belong to another user, whom squeue --me does not show',
  version: PRINTS_AND_EXITS,
  help: PRINTS_AND_EXITS,
  usage: PRINTS_AND_EXITS,
};
/** The short forms of refused options. */
const REFUSED_SHORT: Readonly<Record<string, string>> = {
  o: 'output',
  e: 'error',
  J: 'job-name',
  D: 'chdir',
  a: 'array',
  W: 'wait',
  Q: 'quiet',
  M: 'clusters',
  V: 'version',
  h: 'help',
};
/** sbatch's short options that take a value: in `-c4` the rest of the word is the value. */
const SHORT_WITH_VALUE = new Set([...'aABbcCdDeFGiJLmMnNopqStwx']);

/**
 * Why sbatch must not be given this scheduler-option word, or null when it may. Refused: the
 * long options of REFUSED_LONG and any prefix of one (getopt takes `--outp` for `--output`,
 * and a prefix two options share is an error anyway), their short forms alone or grouped
 * (`-vJname`), `--` (it would end sbatch's options before yonder's own) and `:` (it would
 * start a heterogeneous job's next component).
 */
export function refusedOption(word: string): string | null {
  if (word === '--') return 'it would end sbatch’s options before yonder’s own';
  if (word === ':') return 'heterogeneous jobs are not supported';
  if (word.startsWith('--')) {
    const name = word.slice(2).split('=')[0] as string;
    const option =
      name in REFUSED_LONG
        ? name
        : Object.keys(REFUSED_LONG).find((refused) => refused.startsWith(name));
    return option === undefined ? null : `--${option}: ${REFUSED_LONG[option]}`;
  }
  if (!word.startsWith('-') || word.length < 2) return null;
  for (const letter of word.slice(1)) {
    const option = REFUSED_SHORT[letter];
    if (option !== undefined) return `-${letter} (--${option}): ${REFUSED_LONG[option]}`;
    if (SHORT_WITH_VALUE.has(letter)) return null;
  }
  return null;
}

/** Every refused word of a job's scheduler options, by its place (`schedulerOptions.2`). */
export function schedulerOptionIssues(words: readonly string[]): ValidationIssue[] {
  return words.flatMap((word, index) => {
    const why = refusedOption(word);
    return why === null
      ? []
      : [{ path: `schedulerOptions.${index}`, message: `"${word}" is refused: ${why}` }];
  });
}

/** The Slurm job name: `yonder-<id>-<name>`, with only characters safe in every Slurm tool. */
export function slurmJobName(id: string, name: string): string {
  const safe = name
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .replace(/^[-_.]+/, '')
    .slice(0, 40);
  return safe ? `yonder-${id}-${safe}` : `yonder-${id}`;
}

/**
 * sbatch options for the job's resources and the profile's choices (`options`: its Slurm
 * options, as the backend gets them in `context.options`).
 */
export function sbatchOptions(
  request: SubmitRequestV1,
  jobName: string,
  options: SlurmOptions,
): string[] {
  const out = [`--job-name=${jobName}`, `--comment=${request.marker}`];
  out.push(`--export=${options.export ?? 'ALL'}`);
  if (!options.requeue) out.push('--no-requeue');
  if (request.cwd) out.push(`--chdir=${request.cwd}`);
  out.push(...resourceOptions(request.resources));
  out.push(...request.schedulerOptions);
  return out;
}

/** sbatch options for a job's resources. */
export function resourceOptions(resources: Resources): string[] {
  const out: string[] = [];
  if (resources.time !== undefined) out.push(`--time=${resources.time}`);
  if (resources.cpus !== undefined) out.push(`--cpus-per-task=${resources.cpus}`);
  if (resources.memory !== undefined) out.push(`--mem=${resources.memory}`);
  if (resources.gpus !== undefined) out.push(`--gpus=${resources.gpus}`);
  if (resources.nodes !== undefined) out.push(`--nodes=${resources.nodes}`);
  if (resources.partition !== undefined) out.push(`--partition=${resources.partition}`);
  if (resources.account !== undefined) out.push(`--account=${resources.account}`);
  if (resources.qos !== undefined) out.push(`--qos=${resources.qos}`);
  return out;
}
