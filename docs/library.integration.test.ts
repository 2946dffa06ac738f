/** The program example in docs/library.md runs as written: submit, watch, read a log, cancel. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
// Inside the repository, so `@yonder/*` resolve to the built workspace packages.
const SNIPPETS = join(ROOT, '.tmp', 'library-usage');
let state: string;

beforeAll(() => {
  mkdirSync(SNIPPETS, { recursive: true });
  state = mkdtempSync(join(tmpdir(), 'yonder-library-state-'));
  vi.stubEnv('YONDER_STATE_DIR', state);
});

afterAll(() => {
  vi.unstubAllEnvs();
  rmSync(SNIPPETS, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

it('the example in docs/library.md prints what the page says', async () => {
  const text = readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8');
  const start = text.indexOf('```ts\n') + 6;
  const file = join(SNIPPETS, 'example.ts');
  writeFileSync(file, text.slice(start, text.indexOf('```', start)));
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    await import(pathToFileURL(file).href);
    expect(log.mock.calls).toEqual([
      ['failed', 3, 'hello\n'],
      ['long', 'cancelled'],
    ]);
  } finally {
    log.mockRestore();
  }
}, 60_000);
