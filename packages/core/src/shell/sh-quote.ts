import { YonderError } from '../errors/yonder-error.js';

const SAFE = /^[A-Za-z0-9_/.,:@%+-]+$/;
/** Words sh reads as syntax when they stand bare where a command may start. */
const RESERVED = new Set([
  '!',
  'case',
  'do',
  'done',
  'elif',
  'else',
  'esac',
  'fi',
  'for',
  'if',
  'in',
  'then',
  'until',
  'while',
]);

/**
 * The one quoting function for POSIX sh. The result is a single word that sh reads back as
 * exactly `value`: safe characters stay bare, anything else is single-quoted with each `'`
 * written as `'\''`. NUL cannot be carried by sh at all and is refused.
 * @throws YonderError `E_UNSAFE_VALUE` when the value contains NUL.
 */
export function shQuote(value: string): string {
  if (value.includes('\0')) {
    throw new YonderError('E_UNSAFE_VALUE', 'A value sent to a shell contains a NUL character.');
  }
  if (SAFE.test(value) && !RESERVED.has(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Quote every element and join with spaces: one sh command line whose words are `argv`. */
export function shJoin(argv: readonly string[]): string {
  return argv.map(shQuote).join(' ');
}
