/** The TypeScript usage in the package READMEs runs as written, so it cannot drift from the code. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
// Inside the repository, so `@yonder/*` resolve to the built workspace packages.
const SNIPPETS = join(ROOT, '.tmp', 'readme-usage');

/** The first ```ts block after a README's `## Usage` heading. */
function usage(packageName: string): string {
  const text = readFileSync(join(ROOT, 'packages', packageName, 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## Usage\n'));
  const start = section.indexOf('```ts\n');
  expect(start, `packages/${packageName}/README.md has a ts block under ## Usage`).toBeGreaterThan(
    0,
  );
  return section.slice(start + 6, section.indexOf('```', start + 6));
}

/** Run a README's usage and return what it printed. */
async function run(packageName: string): Promise<unknown[][]> {
  const file = join(SNIPPETS, `${packageName}.ts`);
  writeFileSync(file, usage(packageName));
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    await import(pathToFileURL(file).href);
    return log.mock.calls;
  } finally {
    log.mockRestore();
  }
}

let state: string;
beforeAll(() => {
  mkdirSync(SNIPPETS, { recursive: true });
  state = mkdtempSync(join(tmpdir(), 'yonder-readme-state-'));
  vi.stubEnv('YONDER_STATE_DIR', state);
});

afterAll(() => {
  vi.unstubAllEnvs();
  rmSync(SNIPPETS, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

it("@yonder/core's usage runs a job on this machine and reads its log", async () => {
  expect(await run('core')).toEqual([['succeeded', `hello from ${hostname()}\n`]]);
});

it("@yonder/store-fs's usage lists the active jobs of the ledger", async () => {
  expect(await run('store-fs')).toEqual([[[], []]]);
});
