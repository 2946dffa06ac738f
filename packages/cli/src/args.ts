import { type ParseArgsConfig, parseArgs } from 'node:util';
import { getErrorMessage } from '@yonder/core';
import { isReservedKey } from '@yonder/core/backend-kit';
import { UsageError } from './usage-error.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  /** Everything after a bare `--`, untouched. */
  rest: string[] | null;
}

/**
 * Options whose value is passed on as one word, whatever it starts with: `--scheduler-option
 * --exclusive` means the value `--exclusive` (every scheduler option starts with `-`).
 */
const VERBATIM_OPTIONS = new Set(['scheduler-option']);

/** `--name value` of a verbatim option becomes `--name=value`, so the value is never read as an option. */
function joinVerbatim(head: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let index = 0; index < head.length; index += 1) {
    const word = head[index] as string;
    const name = word.startsWith('--') ? word.slice(2) : null;
    const next = head[index + 1];
    if (name && VERBATIM_OPTIONS.has(name) && options[name] && next !== undefined) {
      out.push(`--${name}=${next}`);
      index += 1;
    } else out.push(word);
  }
  return out;
}

/** The closest known option to a mistyped one (at most two edits away), for "did you mean". */
export function closest(word: string, names: readonly string[]): string | undefined {
  const distance = (a: string, b: string): number => {
    const row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i += 1) {
      let previous = row[0] as number;
      row[0] = i;
      for (let j = 1; j <= b.length; j += 1) {
        const kept = row[j] as number;
        row[j] = Math.min(
          (row[j] as number) + 1,
          (row[j - 1] as number) + 1,
          previous + (a[i - 1] === b[j - 1] ? 0 : 1),
        );
        previous = kept;
      }
    }
    return row[b.length] as number;
  };
  let best: { name: string; score: number } | undefined;
  for (const name of names) {
    const score = distance(word, name);
    if (score <= 2 && (!best || score < best.score)) best = { name, score };
  }
  return best?.name;
}

/** Our message for one of node's parseArgs errors: what was wrong, by option, and where help is. */
function usageMessage(error: unknown, head: readonly string[], options: Options): string {
  const code = (error as { code?: string }).code;
  const text = getErrorMessage(error);
  const quoted = /'([^']*)'/.exec(text)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const name = quoted.replace(/^-+/, '').split('=')[0] ?? '';
    const guess = closest(name, Object.keys(options));
    return `unknown option "${quoted}"${guess ? ` (did you mean --${guess}?)` : ''}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const option = /--([a-z-]+)/.exec(text)?.[1];
    const spec = option ? options[option] : undefined;
    if (spec?.type === 'string') {
      const at = head.findIndex((word) => word === `--${option}` || word === `-${spec.short}`);
      const next = at >= 0 ? head[at + 1] : undefined;
      return next === undefined
        ? `--${option} needs a value`
        : `--${option} needs a value; "${next}" looks like an option (write --${option}=${next} if it is the value)`;
    }
    return option ? `--${option} takes no value` : text;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument "${quoted}"`;
  return text.replace(/\. To specify.*$/s, '');
}

/** Parse a command's arguments strictly; an unknown option is a usage error naming it. */
export function parse(argv: readonly string[], options: Options, command: string): Parsed {
  const split = argv.indexOf('--');
  const head = joinVerbatim(split < 0 ? [...argv] : argv.slice(0, split), options);
  const rest = split < 0 ? null : argv.slice(split + 1);
  const all: Options = { ...options, help: { type: 'boolean', short: 'h' } };
  try {
    const { values, positionals } = parseArgs({
      args: head,
      options: all,
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Parsed['values'], positionals, rest };
  } catch (error) {
    throw new UsageError(`${usageMessage(error, head, all)}. See "yonder ${command} --help".`);
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

/** `KEY=VALUE` pairs into an object; the option's name is used in errors; reserved keys are refused. */
export function pairs(values: unknown, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (values as string[] | undefined) ?? []) {
    const at = item.indexOf('=');
    if (at <= 0) throw new UsageError(`--${name} takes KEY=VALUE, got "${item}".`);
    const key = item.slice(0, at);
    if (isReservedKey(key))
      throw new UsageError(`--${name} ${key}: "${key}" is a reserved name; use another.`);
    out[key] = item.slice(at + 1);
  }
  return out;
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Whole seconds as a duration option reads them, in the largest unit that divides them: `2w`, `30d`, `90m`. */
export function durationText(seconds: number): string {
  for (const [unit, size] of Object.entries(DURATION_UNITS).reverse())
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  return `${seconds}s`;
}

/** A duration option (`90s`, `15m`, `12h`, `30d`, `2w`; a bare number is seconds) in milliseconds. */
export function durationOption(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  const match = /^(\d+(?:\.\d+)?)([smhdw]?)$/.exec(text);
  if (!match)
    throw new UsageError(
      `--${name} must be a duration such as 90s, 15m, 12h, 30d or 2w (a bare number is seconds), got "${text}".`,
    );
  return Number(match[1]) * (DURATION_UNITS[match[2] || 's'] as number) * 1000;
}
