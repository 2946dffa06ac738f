/**
 * The one list of hostile input for every test: fragments that mean something to sh, getopt,
 * Slurm, yonder's templates or a terminal, line breaks, NUL, bytes that are not UTF-8, and
 * "canary" commands that create a file if anything ever runs a value through a shell.
 */
import fc from 'fast-check';

/**
 * Quotes, `$()` and other expansions, separators, globs, option lookalikes (leading `-`),
 * spaces, placeholders, `%` patterns, control characters and odd Unicode. None holds a line
 * break or NUL (see `LINE_BREAKS`, `NUL`): each is a valid argv word, env value and file name.
 */
export const HOSTILE_FRAGMENTS: readonly string[] = [
  "'",
  '"',
  '\\',
  '$',
  '`',
  ';',
  '&',
  '|',
  '*',
  '?',
  '[a]',
  '~',
  '~root',
  '-',
  '--',
  '-rf',
  '--json',
  '--help',
  '-n',
  '-e',
  '#',
  '!',
  '{a,b}',
  '(',
  ')',
  '<',
  '>',
  ' ',
  '  ',
  '\t',
  'a b',
  "it's",
  '"dq"',
  '=',
  'A=1',
  '%s',
  '%j',
  '%x',
  '%%',
  '\\n',
  "'\\''",
  '$HOME',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: sh syntax, on purpose
  '${PATH}',
  '$(id)',
  '`id`',
  '$IFS',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: sh syntax, on purpose
  '${IFS}',
  '$1',
  '$@',
  '{settings}',
  '{id}',
  '{external_ids}',
  '{{',
  '}}',
  '\x7f',
  '\x1b[31m',
  'é',
  'ünï ✓',
  '日本',
  '🎉',
  '\u00a0',
  '\u200b',
  '\u2028',
  ',',
  'yonder:',
  '(null)',
];

/** Line breaks: allowed in argv, env and settings values; refused in names, paths, options. */
export const LINE_BREAKS: readonly string[] = ['\n', '\r', '\r\n'];

/** NUL: no argv word, env value or path can hold it, so yonder refuses it everywhere. */
export const NUL = '\0';

/**
 * Byte sequences that are not UTF-8: a lone continuation byte, 0xff and 0xfe, an overlong
 * `/`, a truncated two-byte sequence, an encoded surrogate, a code point above U+10FFFF.
 * A string cannot hold them; they reach a test as file contents or a program's output.
 */
export const INVALID_UTF8: readonly Buffer[] = [
  Buffer.from([0x80]),
  Buffer.from([0xff]),
  Buffer.from([0xfe]),
  Buffer.from([0xc0, 0xaf]),
  Buffer.from([0xc3]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80]),
];

/** Commands that create the file `canary` if a shell ever interprets the value. */
export function canaryFragments(canary: string): string[] {
  const touch = `touch ${canary}`;
  return [
    `$(${touch})`,
    `\`${touch}\``,
    `;${touch}`,
    `; ${touch};`,
    `|${touch}`,
    `&&${touch}`,
    `||${touch}`,
    `&${touch}`,
    `\n${touch}\n`,
    `'; ${touch}; '`,
    `"; ${touch}; "`,
    `' ; ${touch} ; '`,
    `" ; ${touch} ; "`,
    `$(${touch})'`,
    `>${canary}`,
    `$(IFS=_;x=${touch.replace(' ', '_')};$x)`,
  ];
}

/** Every fragment, line break and canary command, each as a word of its own (for argv). */
export function hostileWords(canary: string): string[] {
  return [...HOSTILE_FRAGMENTS, ...LINE_BREAKS, ...canaryFragments(canary)];
}

export interface HostileStringOptions {
  /** Allow \n and \r (argv, env, settings values); default true. */
  lineBreaks?: boolean;
  /** At most this many pieces joined; default 6. */
  maxParts?: number;
}

/**
 * Strings joined from hostile fragments, canary commands and random Unicode (any code point)
 * or ASCII (control characters included); never NUL.
 */
export function hostileString(
  canary: string,
  options: HostileStringOptions = {},
): fc.Arbitrary<string> {
  const fragments = [...HOSTILE_FRAGMENTS, ...canaryFragments(canary)];
  if (options.lineBreaks ?? true) fragments.push(...LINE_BREAKS);
  return fc
    .array(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...fragments) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 6 }) },
      ),
      { maxLength: options.maxParts ?? 6 },
    )
    .map((parts) => parts.join(''))
    .map((value) => (options.lineBreaks === false ? value.replace(/[\r\n]/g, ' ') : value))
    .filter((value) => !value.includes(NUL));
}
