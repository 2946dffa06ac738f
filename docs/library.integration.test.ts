/** The examples in docs/library.md run as written, as a program author meets them: each of its TypeScript examples, importing only `@yonder/cli`, compiled by tsc against the built package and run by Node over a fresh ledger, prints what the page says it prints. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPOSITORY_ROOT, requireCliBuild } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** Inside the package, so that `@yonder/cli` resolves to this build as it would once installed. */
const WORK = join(REPOSITORY_ROOT, 'packages/cli/.tmp/library-docs');
const PAGE = readFileSync(join(REPOSITORY_ROOT, 'docs/library.md'), 'utf8');

/** Each ```ts block of the page, with the sentence after it that says what it prints. */
function examples(): Array<{ code: string; prints: string[] }> {
  const found: Array<{ code: string; prints: string[] }> = [];
  for (const match of PAGE.matchAll(/```ts\n([\s\S]*?)```\n\n([^\n]*(?:\n[^\n]+)*)/g)) {
    const said = /^It prints (.*?)\./.exec(match[2] as string)?.[1] ?? '';
    found.push({
      code: match[1] as string,
      prints: [...said.matchAll(/`([^`]+)`/g)].map((quoted) => quoted[1] as string),
    });
  }
  return found;
}

let state: string;

beforeAll(() => {
  requireCliBuild();
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  state = mkdtempSync(join(tmpdir(), 'yonder-library-docs-'));
});

afterAll(() => {
  rmSync(WORK, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

describe('docs/library.md', () => {
  it('has examples, each saying what it prints', () => {
    expect(examples().length).toBeGreaterThanOrEqual(2);
    for (const example of examples()) expect(example.prints.length).toBeGreaterThan(0);
  });

  it.each(examples().map((example, index) => [index + 1, example] as const))(
    'example %i compiles against @yonder/cli alone and prints what the page says',
    (index, example) => {
      const source = join(WORK, `example-${index}.mts`);
      writeFileSync(source, example.code);
      const compiled = spawnSync(
        join(REPOSITORY_ROOT, 'node_modules/.bin/tsc'),
        [
          '--strict',
          '--target',
          'es2022',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--skipLibCheck',
          '--rootDir',
          WORK,
          '--outDir',
          WORK,
          source,
        ],
        { encoding: 'utf8', timeout: 180_000 },
      );
      expect(compiled.status, `${compiled.stdout}${compiled.stderr}`).toBe(0);
      const ran = spawnSync(process.execPath, [join(WORK, `example-${index}.mjs`)], {
        encoding: 'utf8',
        timeout: 180_000,
        env: { ...process.env, YONDER_STATE_DIR: join(state, String(index)) },
      });
      expect(ran.status, ran.stderr).toBe(0);
      const lines = ran.stdout
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '');
      expect(lines).toEqual(example.prints);
    },
    240_000,
  );
});
