/** What a job spec must be before anything is submitted: each problem as a dot path and a fix. */
import type { ValidationIssue } from '../errors/validation-error.js';
import type { JobSpec, Resources } from '../spec/job.js';
import { checkDependencies } from './parse-dependency.js';
import { checkPlainData } from './reserved-keys.js';
import { validateContainerFields } from './validate-container.js';
import { checkAbsolutePath, checkText } from './validate-fields.js';
import { checkVariables } from './validate-variables.js';

const TIME = /^(\d+-\d{1,2}(:\d{1,2}(:\d{1,2})?)?|\d+(:\d{1,2}(:\d{1,2})?)?)$/;
const MEMORY = /^\d+[KMGT]?$/i;
const SCHEDULER_WORD = /^[A-Za-z0-9_.,:+=-]+$/;

function checkCount(value: unknown, path: string): ValidationIssue[] {
  if (value === undefined) return [];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000) {
    return [{ path, message: 'must be a whole number of at least 1' }];
  }
  return [];
}

function checkWord(value: unknown, path: string): ValidationIssue[] {
  if (value === undefined) return [];
  if (typeof value !== 'string' || !SCHEDULER_WORD.test(value) || value.startsWith('-')) {
    return [
      {
        path,
        message: 'must be a plain name (letters, digits, _ . , : + = -; not starting with "-")',
      },
    ];
  }
  return [];
}

export function validateResources(
  resources: Resources | undefined,
  path = 'resources',
): ValidationIssue[] {
  if (resources === undefined) return [];
  if (typeof resources !== 'object' || resources === null)
    return [{ path, message: 'must be an object' }];
  const issues: ValidationIssue[] = [];
  const known = new Set(['time', 'cpus', 'memory', 'gpus', 'nodes', 'partition', 'account', 'qos']);
  for (const key of Object.keys(resources)) {
    if (!known.has(key))
      issues.push({
        path: `${path}.${key}`,
        message: `is not a resource; known: ${[...known].join(', ')}`,
      });
  }
  if (
    resources.time !== undefined &&
    (typeof resources.time !== 'string' || !TIME.test(resources.time))
  ) {
    issues.push({
      path: `${path}.time`,
      message: 'must be MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. 1:30:00)',
    });
  }
  if (
    resources.memory !== undefined &&
    (typeof resources.memory !== 'string' || !MEMORY.test(resources.memory))
  ) {
    issues.push({
      path: `${path}.memory`,
      message: 'must be a number with an optional unit K, M, G or T (e.g. 4G)',
    });
  }
  issues.push(...checkCount(resources.cpus, `${path}.cpus`));
  issues.push(...checkCount(resources.nodes, `${path}.nodes`));
  if (
    resources.gpus !== undefined &&
    !(resources.gpus === 0 || checkCount(resources.gpus, '').length === 0)
  ) {
    issues.push({ path: `${path}.gpus`, message: 'must be a whole number' });
  }
  issues.push(...checkWord(resources.partition, `${path}.partition`));
  issues.push(...checkWord(resources.account, `${path}.account`));
  issues.push(...checkWord(resources.qos, `${path}.qos`));
  return issues;
}

/**
 * Validate what a caller asked to run. Every problem is returned, as a dot path and a fix.
 * Argument words may hold anything but NUL: they reach the job literally, never a shell.
 */
export function validateJobSpec(spec: JobSpec): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (!Array.isArray(spec.argv) || spec.argv.length === 0) {
    issues.push({ path: 'argv', message: 'needs at least the program to run (after "--")' });
  } else {
    spec.argv.forEach((word, index) => {
      if (typeof word !== 'string')
        issues.push({ path: `argv.${index}`, message: 'must be a string' });
      else if (word.includes('\0'))
        issues.push({ path: `argv.${index}`, message: 'may not contain a NUL character' });
    });
    if (spec.argv[0] === '')
      issues.push({ path: 'argv.0', message: 'the program name may not be empty' });
  }
  if (spec.name !== undefined) issues.push(...checkText(spec.name, 'name', { maxLength: 200 }));
  if (
    spec.settings !== undefined &&
    (typeof spec.settings !== 'object' || spec.settings === null || Array.isArray(spec.settings))
  ) {
    issues.push({ path: 'settings', message: 'must be a JSON object' });
  } else if (spec.settings !== undefined) {
    issues.push(...checkPlainData(spec.settings, 'settings'));
  }
  issues.push(...checkVariables(spec.env, 'env'));
  issues.push(...checkVariables(spec.secrets, 'secrets'));
  if (spec.env && spec.secrets) {
    for (const name of Object.keys(spec.secrets)) {
      if (name in spec.env)
        issues.push({
          path: `secrets.${name}`,
          message: 'is also set in env; set it in one place',
        });
    }
  }
  issues.push(...validateResources(spec.resources));
  if (spec.schedulerOptions !== undefined) {
    if (!Array.isArray(spec.schedulerOptions))
      issues.push({ path: 'schedulerOptions', message: 'must be a list of arguments' });
    else
      spec.schedulerOptions.forEach((word, index) => {
        issues.push(...checkText(word, `schedulerOptions.${index}`));
      });
  }
  if (spec.cwd !== undefined) issues.push(...checkAbsolutePath(spec.cwd, 'cwd'));
  if (spec.container !== undefined && spec.container !== null)
    issues.push(...validateContainerFields(spec.container, 'container'));
  issues.push(...checkDependencies(spec.after));
  return issues;
}

/**
 * A job's wall-clock limit (`resources.time`, in Slurm's forms: `MM`, `MM:SS`, `HH:MM:SS`,
 * `D-HH`, `D-HH:MM`, `D-HH:MM:SS`) in seconds, for schedulers that take seconds (Grid Engine's
 * `h_rt`); null when the text is not one of those forms.
 */
export function timeLimitSeconds(time: string): number | null {
  if (!TIME.test(time)) return null;
  const [days, clock] = time.includes('-') ? time.split('-') : [undefined, time];
  const parts = (clock as string).split(':').map(Number);
  if (days !== undefined) {
    const [hours = 0, minutes = 0, seconds = 0] = parts;
    return ((Number(days) * 24 + hours) * 60 + minutes) * 60 + seconds;
  }
  if (parts.length === 3) {
    const [hours, minutes, seconds] = parts as [number, number, number];
    return (hours * 60 + minutes) * 60 + seconds;
  }
  const [minutes, seconds = 0] = parts as [number, number?];
  return minutes * 60 + seconds;
}
