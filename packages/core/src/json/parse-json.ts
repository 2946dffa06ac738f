/** JSON read from outside (settings, records, config): parsed, then refused when it nests too deep or uses a reserved key. */
import type { ValidationIssue } from '../errors/validation-error.js';
import { checkPlainData, MAX_JSON_DEPTH } from '../validation/reserved-keys.js';
import type { JsonValue } from './json-value.js';

export type ParsedJson =
  | { ok: true; value: JsonValue }
  | { ok: false; issues: ValidationIssue[]; syntax: boolean };

/**
 * What JSON.parse found wrong, never quoting the text: a file given by mistake (a secrets
 * file for `--settings`) must not be printed in the error. A position becomes a line and column.
 */
function syntaxProblem(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const at = /^(.*?) in JSON at position (\d+)/.exec(message);
  if (at) {
    const before = text.slice(0, Number(at[2]));
    const line = before.split('\n').length;
    const column = before.length - before.lastIndexOf('\n');
    // One line of text (a line of a batch file): its column is enough.
    return text.includes('\n')
      ? `${at[1]} at line ${line}, column ${column}`
      : `${at[1]} at column ${column}`;
  }
  if (/^Unexpected end of JSON input/.test(message)) return 'it ends too early';
  return 'an unexpected character';
}

/**
 * Parse JSON text that came from outside. V8's JSON.parse does not recurse, so any text is
 * parsed without a stack overflow; the value is then checked, without recursion, for nesting
 * deeper than `maxDepth` and for `__proto__`, `constructor` and `prototype` keys. Issues are
 * dot paths under `prefix`; `syntax` says the text was not JSON at all.
 */
export function parseJson(
  text: string,
  options: { prefix?: string; maxDepth?: number } = {},
): ParsedJson {
  const prefix = options.prefix ?? '';
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (error) {
    return {
      ok: false,
      syntax: true,
      issues: [{ path: prefix, message: `is not valid JSON (${syntaxProblem(text, error)})` }],
    };
  }
  const issues = checkPlainData(value, prefix, options.maxDepth ?? MAX_JSON_DEPTH);
  return issues.length > 0 ? { ok: false, issues, syntax: false } : { ok: true, value };
}
