/** `--format TEMPLATE` for scripts: `{field}` and `{a.b}` placeholders over a job's JSON record, one line per job. */
import type { JobRecord } from '@yonder/core';
import { escapeControlCharacters } from './escape-control-characters.js';
import { jobJson } from './output.js';
import { UsageError } from './usage-error.js';

/** `{field}`, `{a.b}`, and `{field:from=to,…,*=other}` (a value mapped to another word). */
const PLACEHOLDER = /\{([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)*)(?::([^{}]*))?\}/g;

/** A placeholder's mapping, `succeeded=success,*=running`, as pairs; `*` is every other value. */
function mapping(text: string | undefined, placeholder: string): Map<string, string> | null {
  if (text === undefined) return null;
  const pairs = new Map<string, string>();
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0)
      throw new UsageError(
        `--format: {${placeholder}} maps values as from=to pairs separated by commas (*=to for the rest), e.g. {state:succeeded=success,*=running}; "${pair}" is not one.`,
      );
    pairs.set(pair.slice(0, at), pair.slice(at + 1));
  }
  return pairs;
}

/** What `jobJson` leaves out of a record (see `listedJob`). */
type Internal = 'revision' | 'submitter' | 'misses' | 'logTail';

/**
 * The fields a template may name: every field of a job's JSON record (`yonder status ID
 * --json`). Typed over the record, so a field added to it cannot be missing here.
 */
const FIELD_SET: Record<Exclude<keyof JobRecord, Internal>, true> = {
  id: true,
  name: true,
  profile: true,
  backend: true,
  target: true,
  state: true,
  nativeState: true,
  exitCode: true,
  signal: true,
  reason: true,
  failureKind: true,
  externalId: true,
  createdAt: true,
  updatedAt: true,
  submittedAt: true,
  startedAt: true,
  finishedAt: true,
  noticedAt: true,
  error: true,
  history: true,
  cancel: true,
  absentSince: true,
  pendingSince: true,
  spec: true,
  containerImage: true,
  profileSnapshot: true,
  data: true,
  after: true,
};
const FIELDS = Object.keys(FIELD_SET);

/**
 * Check a template once, before any job is shown: every placeholder names a field of the
 * record (a nested one by dots), or the usage error names it and lists the fields.
 */
export function checkFormat(template: string): void {
  for (const match of template.matchAll(PLACEHOLDER)) {
    mapping(match[2], match[0].slice(1, -1));
    const head = (match[1] as string).split('.')[0] as string;
    if (!Object.hasOwn(FIELD_SET, head))
      throw new UsageError(
        `--format: {${match[1]}} is not a field of a job; use one of ${FIELDS.map((f) => `{${f}}`).join(' ')}.`,
      );
  }
}

/**
 * One job through a template, ending in a newline. Strings are printed as they are (null and a
 * missing field as an empty string), other values as JSON; `{field:from=to,…,*=other}` prints
 * `to` for `from` (and `other` for any value not named); `\n` and `\t` in the template are a
 * newline and a tab. On a terminal, control characters in values are shown escaped.
 */
export function formatJob(template: string, job: JobRecord, terminal: boolean): string {
  const record = jobJson(job);
  const text = template
    .replace(/\\n/g, '\n')
    .replace(/\\t/g, '\t')
    .replace(PLACEHOLDER, (match, path: string, map: string | undefined) => {
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
      const pairs = mapping(map, match.slice(1, -1));
      const mapped = pairs ? (pairs.get(shown) ?? pairs.get('*') ?? shown) : shown;
      return terminal ? escapeControlCharacters(mapped) : mapped;
    });
  return text.endsWith('\n') ? text : `${text}\n`;
}
