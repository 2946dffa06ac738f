import { type ParseArgsConfig, parseArgs } from 'node:util';
import { getErrorMessage } from '@yonder/core';
import { UsageError } from './usage-error.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  /** Everything after a bare `--`, untouched. */
  rest: string[] | null;
}

/** Parse a command's arguments strictly; an unknown option is a usage error naming it. */
export function parse(argv: readonly string[], options: Options, command: string): Parsed {
  const split = argv.indexOf('--');
  const head = split < 0 ? [...argv] : argv.slice(0, split);
  const rest = split < 0 ? null : argv.slice(split + 1);
  try {
    const { values, positionals } = parseArgs({
      args: head,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Parsed['values'], positionals, rest };
  } catch (error) {
    throw new UsageError(
      `${getErrorMessage(error).replace(/\. To specify.*$/s, '')}. See "yonder ${command} --help".`,
    );
  }
}

/** A whole number option, or a usage error naming it. */
export function integerOption(value: unknown, name: string, minimum = 0): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^\d+$/.test(text) || Number(text) < minimum) {
    throw new UsageError(
      `--${name} must be a whole number${minimum > 0 ? ` of at least ${minimum}` : ''}, got "${text}".`,
    );
  }
  return Number(text);
}

/** A positive number option (may have decimals). */
export function numberOption(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^\d+(\.\d+)?$/.test(text))
    throw new UsageError(`--${name} must be a number of seconds, got "${text}".`);
  return Number(text);
}

/** `KEY=VALUE` pairs into an object; the option's name is used in errors. */
export function pairs(values: unknown, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (values as string[] | undefined) ?? []) {
    const at = item.indexOf('=');
    if (at <= 0) throw new UsageError(`--${name} takes KEY=VALUE, got "${item}".`);
    out[item.slice(0, at)] = item.slice(at + 1);
  }
  return out;
}
