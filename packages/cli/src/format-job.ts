/** `--format TEMPLATE` for scripts: `{field}` and `{a.b}` placeholders over a job's JSON record, one line per job. */
import type { JobRecord } from '@yonder/core';
import { escapeControlCharacters } from './format-table.js';
import { jobJson } from './output.js';
import { UsageError } from './usage-error.js';

const PLACEHOLDER = /\{([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)*)\}/g;

/** The fields a template may name: those of a job's JSON record (`yonder status ID --json`). */
const FIELDS = [
  'id',
  'name',
  'profile',
  'backend',
  'target',
  'state',
  'nativeState',
  'exitCode',
  'signal',
  'reason',
  'failureKind',
  'externalId',
  'createdAt',
  'updatedAt',
  'finishedAt',
  'startedAt',
  'error',
  'cancel',
  'spec',
  'data',
  'history',
  'profileSnapshot',
] as const;

/**
 * Check a template once, before any job is shown: every placeholder names a field of the
 * record (a nested one by dots), or the usage error names it and lists the fields.
 */
export function checkFormat(template: string): void {
  for (const match of template.matchAll(PLACEHOLDER)) {
    const head = (match[1] as string).split('.')[0] as string;
    if (!(FIELDS as readonly string[]).includes(head))
      throw new UsageError(
        `--format: {${match[1]}} is not a field of a job; use one of ${FIELDS.map((f) => `{${f}}`).join(' ')}.`,
      );
  }
}

/**
 * One job through a template, ending in a newline. Strings are printed as they are (null and a
 * missing field as an empty string), other values as JSON; `\n` and `\t` in the template are a
 * newline and a tab. On a terminal, control characters in values are shown escaped.
 */
export function formatJob(template: string, job: JobRecord, terminal: boolean): string {
  const record = jobJson(job);
  const text = template
    .replace(/\\n/g, '\n')
    .replace(/\\t/g, '\t')
    .replace(PLACEHOLDER, (_match, path: string) => {
      let value: unknown = record;
      for (const key of path.split('.')) {
        value =
          value !== null && typeof value === 'object' && Object.hasOwn(value, key)
            ? (value as Record<string, unknown>)[key]
            : undefined;
      }
      const shown =
        value === undefined || value === null
          ? ''
          : typeof value === 'string'
            ? value
            : JSON.stringify(value);
      return terminal ? escapeControlCharacters(shown) : shown;
    });
  return text.endsWith('\n') ? text : `${text}\n`;
}
