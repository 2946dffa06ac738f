/**
 * What the reliability suite's hostile runs are made of, beyond the shared fragments of
 * `@yonder/test-helpers`: hostile path components and the canaries they may create, the job
 * that dumps its argv, environment and working directory byte for byte, and reading that back.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { HOSTILE_FRAGMENTS, hostileString, requireCliBuild } from '@yonder/test-helpers';
import fc from 'fast-check';
import { afterAll, beforeAll } from 'vitest';
import { cleanupAll, scratch, summary } from './harness.js';

/**
 * Canary commands that fit in one path component (no `/`): `cd` first, so the canary lands in
 * the home directory of whoever interpreted it (see `homeCanaries`).
 */
export function componentCanaryFragments(name: string): string[] {
  const touch = `cd;touch ${name}`;
  return [`$(${touch})`, `\`${touch}\``, `;${touch};`, `|${touch}`, `&&${touch}`, `'; ${touch}; '`];
}

/** Where `componentCanaryFragments(name)` would land: this user's and the ssh test user's home. */
export function homeCanaries(name: string): string[] {
  return [join(homedir(), name), join('/home/yonder-test', name)];
}

/** A single path component (no `/`, not `.`/`..`, not empty), at most 120 bytes. */
export function hostileComponent(canaryName: string): fc.Arbitrary<string> {
  return fc
    .array(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_FRAGMENTS) },
        { weight: 1, arbitrary: fc.constantFrom(...componentCanaryFragments(canaryName)) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
      ),
      { minLength: 1, maxLength: 4 },
    )
    .map((parts) =>
      parts
        .join('')
        .replaceAll('/', '_')
        .replace(/[\r\n]/g, ' '),
    )
    .filter(
      (value) =>
        !value.includes('\0') && value !== '.' && value !== '..' && Buffer.byteLength(value) <= 120,
    );
}

/** One hostile test file's canaries and its count of the inputs it tried. */
export interface HostileRun {
  /** A file that a shell running any canary command would create (set before the tests). */
  canary: string;
  /** A name that `componentCanaryFragments` would create in a home directory. */
  readonly token: string;
  /** Every place a canary could land. */
  all: string[];
  count(what: string): void;
}

/**
 * Set up a hostile test file (its hooks): the canaries before its tests; after them the
 * summary line `hostile input (LABEL): inputs tried …` and the cleanup.
 */
export function hostileRun(label: string, tokenName: string): HostileRun {
  const tried: Record<string, number> = {};
  const run: HostileRun = {
    canary: '',
    token: `yonder-canary-${process.pid}-${tokenName}`,
    all: [],
    count(what) {
      tried[what] = (tried[what] ?? 0) + 1;
    },
  };
  beforeAll(() => {
    requireCliBuild();
    run.canary = join(scratch('canary'), 'CANARY');
    run.all = [run.canary, ...homeCanaries(run.token)];
  });
  afterAll(() => {
    summary(
      `hostile input (${label}): inputs tried ${Object.entries(tried)
        .map(([what, n]) => `${what} ${n}`)
        .join(', ')}; canaries created 0`,
    );
    cleanupAll();
  });
  return run;
}

/** What the job should see as argv once `{settings}` has been replaced (when there are settings). */
export function expectedArgv(words: readonly string[], settingsPath: string | null): string[] {
  return words.map((word) =>
    settingsPath === null ? word : word.split('{settings}').join(settingsPath),
  );
}

/**
 * A hostile local job: argv, a name, env values, settings (keys too) from `hostileString`, and
 * perhaps a working directory named by `hostileComponent(token)`.
 */
export function hostileJob(canary: string, token: string) {
  return fc.record({
    args: fc.array(hostileString(canary), { maxLength: 6 }),
    name: hostileString(canary, { lineBreaks: false }).filter(
      (name) => name.trim() !== '' && name.length <= 200,
    ),
    env: fc.dictionary(fc.constantFrom(...ENV_NAMES), hostileString(canary)),
    settings: fc.option(
      fc.dictionary(hostileString(canary, { maxParts: 3 }), hostileString(canary)),
      { nil: undefined },
    ),
    settingsWords: fc.boolean(),
    cwd: fc.option(hostileComponent(token), { nil: undefined }),
  });
}

/** Throw if any canary exists (removing them), naming the context. */
export function assertNoCanary(canaries: string | readonly string[], context: string): void {
  const found = (typeof canaries === 'string' ? [canaries] : canaries).filter((path) =>
    existsSync(path),
  );
  for (const path of found) rmSync(path, { force: true });
  if (found.length > 0)
    throw new Error(`A shell interpreted a value: ${found.join(', ')} created (${context}).`);
}

/** Split NUL-terminated records (`printf '%s\0'`, `env -0`). */
export function splitNul(text: string): string[] {
  if (text === '') return [];
  const parts = text.split('\0');
  parts.pop();
  return parts;
}

/** `env -0` output as an object. */
export function parseEnv0(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of splitNul(text)) {
    const at = entry.indexOf('=');
    if (at > 0) out[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return out;
}

/**
 * The job every hostile run executes: `sh -c DUMP dump OUT ARG…` writes its arguments
 * (`OUT.argv`), its environment (`OUT.env`, `env -0`) and its working directory (`OUT.cwd`),
 * byte for byte, then `OUT.done`.
 */
export const DUMP =
  'o=$1; shift; pwd -P > "$o.cwd"; for a in "$@"; do printf "%s\\0" "$a"; done > "$o.argv"; env -0 > "$o.env"; : > "$o.done"';

export interface Dump {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

export function readDump(out: string): Dump {
  return {
    argv: splitNul(readFileSync(`${out}.argv`, 'utf8')),
    env: parseEnv0(readFileSync(`${out}.env`, 'utf8')),
    cwd: readFileSync(`${out}.cwd`, 'utf8').replace(/\n$/, ''),
  };
}

export function dumpDone(out: string): boolean {
  return existsSync(`${out}.done`);
}

/** Environment variable names used by the properties (values are hostile). */
export const ENV_NAMES = ['H0', 'H1', 'H_2', '_h3'] as const;

export function joinOut(dir: string, run: number): string {
  return join(dir, `run-${run}`);
}
