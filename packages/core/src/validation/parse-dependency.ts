/** `JOB[:WHEN]`, as `--after` and a batch line's `after` give a job's parents: read and checked, before any job is looked up. */
import type { ValidationIssue } from '../errors/validation-error.js';
import type { DependencyCondition } from '../spec/job.js';

/** The conditions a dependent may wait for, `ok` first (the default). */
export const DEPENDENCY_CONDITIONS: readonly DependencyCondition[] = [
  'ok',
  'notok',
  'any',
  'started',
];

/** The most parents one job may name. */
export const MAX_DEPENDENCIES = 1000;

/** One parent as given: a job id or prefix (lower case), or `#N` of the same batch. */
export type DependencyReference =
  | { readonly kind: 'job'; readonly prefix: string; readonly when: DependencyCondition }
  | { readonly kind: 'batch'; readonly number: number; readonly when: DependencyCondition };

const JOB = /^[0-9a-f]{1,64}$/i;
const BATCH = /^#([1-9][0-9]{0,8})$/;
const FIX =
  'give JOB or JOB:WHEN, where JOB is a job id or a prefix of one (e.g. 3f9a) or #N, the job of line N of the same batch, and WHEN is ok, notok, any or started';

/** The value as a message shows it: quoted, control characters escaped. */
function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/** Read one `JOB[:WHEN]`, or say what is wrong with it and how to write it. */
export function parseDependency(
  text: unknown,
): { ok: true; value: DependencyReference } | { ok: false; message: string } {
  if (typeof text !== 'string') return { ok: false, message: `must be a string; ${FIX}` };
  if (text.trim() === '') return { ok: false, message: `is empty; ${FIX}` };
  const colon = text.lastIndexOf(':');
  const job = colon < 0 ? text : text.slice(0, colon);
  const word = colon < 0 ? 'ok' : text.slice(colon + 1);
  if (!(DEPENDENCY_CONDITIONS as readonly string[]).includes(word))
    return {
      ok: false,
      message: `${shown(text)}: ${shown(word)} is not a condition; WHEN is ok (the default), notok, any or started (e.g. ${shown(`${job}:notok`)})`,
    };
  const when = word as DependencyCondition;
  const batch = BATCH.exec(job);
  if (batch) return { ok: true, value: { kind: 'batch', number: Number(batch[1]), when } };
  if (JOB.test(job)) return { ok: true, value: { kind: 'job', prefix: job.toLowerCase(), when } };
  return { ok: false, message: `${shown(text)}: ${shown(job)} names no job; ${FIX}` };
}

/** Every problem of a spec's `after`, as `after.N` issues; nothing is looked up. */
export function checkDependencies(after: unknown, path = 'after'): ValidationIssue[] {
  if (after === undefined) return [];
  if (!Array.isArray(after))
    return [{ path, message: `must be a list such as ["3f9a", "#1:notok"]; ${FIX}` }];
  if (after.length > MAX_DEPENDENCIES)
    return [{ path, message: `names ${after.length} jobs; at most ${MAX_DEPENDENCIES}` }];
  const issues: ValidationIssue[] = [];
  after.forEach((text, index) => {
    const parsed = parseDependency(text);
    if (!parsed.ok) issues.push({ path: `${path}.${index}`, message: parsed.message });
  });
  return issues;
}
