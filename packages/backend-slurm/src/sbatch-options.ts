/** What sbatch is told about a job: its name, its options, and the scheduler options yonder keeps for itself. */
import type { SubmitRequestV1 } from '@yonder/core';
import type { SlurmOptions } from './slurm-options.js';

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
  const { resources } = request;
  const out = [`--job-name=${jobName}`, `--comment=${request.marker}`];
  out.push(`--export=${options.export ?? 'ALL'}`);
  if (!options.requeue) out.push('--no-requeue');
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
