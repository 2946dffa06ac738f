import { getErrorMessage } from '../errors/get-error-message.js';
import type { ValidationIssue } from '../errors/validation-error.js';
import { YonderError } from '../errors/yonder-error.js';
import { splitCommandLine } from './split-template.js';

/** A command template, split into words, each a list of literal text and placeholders. */
export interface ParsedTemplate {
  readonly words: ReadonlyArray<ReadonlyArray<{ literal: string } | { name: string }>>;
  /** Every placeholder name used. */
  readonly placeholders: ReadonlySet<string>;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function parseWord(word: string, label: string): Array<{ literal: string } | { name: string }> {
  const parts: Array<{ literal: string } | { name: string }> = [];
  let literal = '';
  let index = 0;
  while (index < word.length) {
    const char = word[index] as string;
    if (char === '{' && word[index + 1] === '{') {
      literal += '{';
      index += 2;
      continue;
    }
    if (char === '}' && word[index + 1] === '}') {
      literal += '}';
      index += 2;
      continue;
    }
    if (char === '}') {
      throw new YonderError(
        'E_INVALID_TEMPLATE',
        `${label} has a lone "}" in "${word}"; write "}}" for a literal brace.`,
      );
    }
    if (char === '{') {
      const end = word.indexOf('}', index + 1);
      const name = end < 0 ? '' : word.slice(index + 1, end);
      if (end < 0 || !NAME.test(name)) {
        throw new YonderError(
          'E_INVALID_TEMPLATE',
          `${label} has invalid placeholder syntax in "${word}"; placeholders look like {name}, and "{{" is a literal brace.`,
        );
      }
      if (literal) parts.push({ literal });
      literal = '';
      parts.push({ name });
      index = end + 1;
      continue;
    }
    literal += char;
    index += 1;
  }
  if (literal || parts.length === 0) parts.push({ literal });
  return parts;
}

/**
 * Parse a command template: split it like sh (no expansion), then find `{name}` placeholders
 * inside each word. `allowed` lists the placeholder names that exist.
 * @throws YonderError `E_INVALID_TEMPLATE` naming the problem and the template's label.
 */
export function parseTemplate(
  template: string,
  label: string,
  allowed: readonly string[],
  options: { requireProgram?: boolean } = {},
): ParsedTemplate {
  const words = splitCommandLine(template, label);
  if (words.length === 0) throw new YonderError('E_INVALID_TEMPLATE', `${label} is empty.`);
  if ((options.requireProgram ?? true) && (words[0] as string).startsWith('-')) {
    throw new YonderError(
      'E_INVALID_TEMPLATE',
      `${label} must begin with a program name, not an option.`,
    );
  }
  const parsed = words.map((word) => parseWord(word, label));
  const placeholders = new Set<string>();
  for (const word of parsed)
    for (const part of word) if ('name' in part) placeholders.add(part.name);
  for (const name of placeholders) {
    if (!allowed.includes(name)) {
      throw new YonderError(
        'E_INVALID_TEMPLATE',
        `${label} uses unknown placeholder {${name}}; known placeholders: ${allowed.map((a) => `{${a}}`).join(', ')}.`,
      );
    }
  }
  return { words: parsed, placeholders };
}

/**
 * Substitute values into a parsed template, word by word: a value with spaces, quotes or
 * `$()` stays inside the one argument it was placed in.
 * @throws YonderError `E_INVALID_TEMPLATE` when a placeholder has no value.
 */
export function renderTemplate(
  parsed: ParsedTemplate,
  values: Readonly<Record<string, string | undefined>>,
  label: string,
): string[] {
  return parsed.words.map((word) =>
    word
      .map((part) => {
        if ('literal' in part) return part.literal;
        const value = values[part.name];
        if (value === undefined) {
          throw new YonderError(
            'E_INVALID_TEMPLATE',
            `${label}: placeholder {${part.name}} has no value here.`,
          );
        }
        return value;
      })
      .join(''),
  );
}

/** Validate a template without throwing: the issues, with `path` as the field name. */
export function checkTemplate(
  template: string,
  path: string,
  allowed: readonly string[],
  options: { requireProgram?: boolean } = {},
): { issues: ValidationIssue[]; parsed?: ParsedTemplate } {
  try {
    return { issues: [], parsed: parseTemplate(template, path, allowed, options) };
  } catch (error) {
    return { issues: [{ path, message: getErrorMessage(error) }] };
  }
}

/**
 * Replace `{settings}` (or another single placeholder) in job argv. Job argv is not a
 * template: any other braces are left exactly as they are.
 */
export function replacePlaceholder(argv: readonly string[], name: string, value: string): string[] {
  const token = `{${name}}`;
  return argv.map((word) => word.split(token).join(value));
}
