import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostileString } from '@yonder/test-helpers';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { YonderError } from '../errors/yonder-error.js';
import { renderEnvFile } from './render-env-file.js';
import { shJoin, shQuote } from './sh-quote.js';

let dir = '';
let canary = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'yonder-shquote-'));
  canary = join(dir, 'CANARY');
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Run a command line in the real /bin/sh (argv, no Node shell) and return its stdout. */
function sh(script: string, ...args: string[]): { stdout: string; status: number | null } {
  const result = spawnSync('/bin/sh', ['-c', script, 'sh', ...args], { encoding: 'utf8' });
  if (result.error) throw result.error;
  return { stdout: result.stdout, status: result.status };
}

function thrown(fn: () => unknown): YonderError {
  try {
    fn();
  } catch (error) {
    expect(YonderError.isInstance(error)).toBe(true);
    return error as YonderError;
  }
  throw new Error('expected a YonderError, but nothing was thrown');
}

/** Hostile strings whose canary commands would create `canary` (set in beforeAll, so lazily). */
function hostile(): fc.Arbitrary<string> {
  return hostileString(canary, { maxParts: 8 });
}

describe('shQuote', () => {
  it('leaves safe words bare and quotes everything else', () => {
    expect(shQuote('abc-1.2_x/y,z:w@h%p+q')).toBe('abc-1.2_x/y,z:w@h%p+q');
    // `=` and reserved words are quoted: bare, they could be read as an assignment or as syntax.
    expect(shQuote('A=1')).toBe("'A=1'");
    expect(shQuote('if')).toBe("'if'");
    expect(shQuote('')).toBe("''");
    expect(shQuote('a b')).toBe("'a b'");
    expect(shQuote("it's")).toBe("'it'\\''s'");
    expect(shQuote('~')).toBe("'~'");
    expect(shQuote('*')).toBe("'*'");
  });

  it('refuses NUL with E_UNSAFE_VALUE', () => {
    expect(thrown(() => shQuote('a\0b')).code).toBe('E_UNSAFE_VALUE');
    expect(thrown(() => shQuote('\0')).code).toBe('E_UNSAFE_VALUE');
  });

  it('the canary check can see an injection: unquoted, sh runs it', () => {
    const probe = join(dir, 'PROBE');
    sh(`printf '%s' $(touch ${probe})`);
    expect(existsSync(probe)).toBe(true);
  });

  it('sh reads every quoted value back exactly, and never runs anything in it', () => {
    fc.assert(
      fc.property(hostile(), (value) => {
        const { stdout, status } = sh(`printf '%s' ${shQuote(value)}`);
        expect(status).toBe(0);
        expect(stdout).toBe(value);
      }),
      { numRuns: 200 },
    );
    expect(existsSync(canary)).toBe(false);
  });

  it.each([
    [`$(touch ${'CANARY'})`],
    ['`touch CANARY`'],
    ["'; touch CANARY; '"],
    ['a\nb\n'],
    ['-n'],
    ['~'],
    ['*'],
    ["''''"],
    ['\\'],
  ])('round-trips the fixed example %j', (template) => {
    const value = template.replaceAll('CANARY', canary);
    expect(sh(`printf '%s' ${shQuote(value)}`).stdout).toBe(value);
    expect(existsSync(canary)).toBe(false);
  });
});

describe('shJoin', () => {
  it('gives one sh command line whose words are exactly the argv', () => {
    fc.assert(
      fc.property(fc.array(hostile(), { maxLength: 5 }), (words) => {
        const { stdout } = sh(`printf '[%s]' ${shJoin(words)}`);
        expect(stdout).toBe(words.length === 0 ? '[]' : words.map((word) => `[${word}]`).join(''));
      }),
      { numRuns: 100 },
    );
    expect(existsSync(canary)).toBe(false);
  });

  it('joins with single spaces and quotes each word', () => {
    expect(shJoin(['printf', '%s', 'a b', ''])).toBe("printf %s 'a b' ''");
    expect(shJoin([])).toBe('');
  });

  it('refuses NUL in any word', () => {
    expect(thrown(() => shJoin(['ok', 'bad\0'])).code).toBe('E_UNSAFE_VALUE');
  });

  // BUG: `=` is in the bare-safe set, so a first word like `A=1` is read by sh as a variable
  // assignment and the next word becomes the command. The program named `A=1` should run
  // (and, not existing, fail with 127); instead `printf` runs and prints `x`.
  it('keeps a first word containing "=" a command word, not an assignment', () => {
    const { stdout, status } = sh(shJoin(['A=1', 'printf', '%s', 'x']));
    expect(stdout).toBe('');
    expect(status).toBe(127);
  });
});

describe('renderEnvFile', () => {
  /** Source the rendered file in real sh and print each variable NUL-separated. */
  function sourceAndPrint(variables: Record<string, string>): string[] {
    const file = join(dir, `env-${Math.random().toString(16).slice(2)}.sh`);
    writeFileSync(file, renderEnvFile(variables));
    const names = Object.keys(variables);
    const script = `. "$1" && printf '%s\\0' ${names.map((name) => `"$${name}"`).join(' ')}`;
    const result = spawnSync('/bin/sh', ['-c', script, 'sh', file], { encoding: 'utf8' });
    rmSync(file);
    expect(result.status).toBe(0);
    return result.stdout.split('\0').slice(0, names.length);
  }

  it('renders export lines, one per variable', () => {
    expect(renderEnvFile({ A: 'x', B_2: 'a b' })).toBe("export A=x\nexport B_2='a b'\n");
    expect(renderEnvFile({})).toBe('');
  });

  it('sourcing it in sh gives exactly the values, and runs nothing', () => {
    const variables = {
      PLAIN: 'value',
      EMPTY: '',
      SPACES: '  a  b  ',
      QUOTES: `it's "quoted"`,
      SUBST: `$(touch ${canary})`,
      BACKTICK: `\`touch ${canary}\``,
      SEMI: `x; touch ${canary}`,
      NEWLINES: 'line1\nline2\n',
      DASH: '-n',
      UNICODE: 'héllo 日本 🎉',
      DOLLAR: '$HOME ${PATH}',
      BACKSLASH: '\\n\\',
      _under: 'u',
    };
    expect(sourceAndPrint(variables)).toEqual(Object.values(variables));
    expect(existsSync(canary)).toBe(false);
  });

  it('round-trips arbitrary values through sh', () => {
    fc.assert(
      fc.property(fc.array(hostile(), { minLength: 1, maxLength: 4 }), (values) => {
        const variables = Object.fromEntries(values.map((value, index) => [`V${index}`, value]));
        expect(sourceAndPrint(variables)).toEqual(values);
      }),
      { numRuns: 50 },
    );
    expect(existsSync(canary)).toBe(false);
  });

  it.each([['1ABC'], ['A-B'], ['A B'], ['A=B'], [''], ['$(id)'], ['A;touch x'], ['é'], ['A\n']])(
    'refuses the variable name %j with E_UNSAFE_VALUE',
    (name) => {
      const error = thrown(() => renderEnvFile({ OK: 'x', [name]: 'v' }));
      expect(error.code).toBe('E_UNSAFE_VALUE');
    },
  );

  it('refuses a NUL in a value', () => {
    expect(thrown(() => renderEnvFile({ A: 'a\0b' })).code).toBe('E_UNSAFE_VALUE');
  });
});
