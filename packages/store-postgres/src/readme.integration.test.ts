/** The README's usage runs as written against the private cluster (its URL and the package's import put for the test's). */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { dropAll, testLedger } from './test-ledger.js';

const HERE = new URL('.', import.meta.url).pathname;
const scratch = mkdtempSync(join(HERE, '.readme-'));
afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await dropAll();
});

it("the README's usage lists the active jobs", async () => {
  const text = readFileSync(join(HERE, '..', 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## Usage\n'));
  const start = section.indexOf('```ts\n') + 6;
  const usage = section.slice(start, section.indexOf('```', start));
  expect(usage).toContain("'postgresql:///yonder_lab?host=/run/postgresql'");
  const ledger = await testLedger('yonder_readme');
  const file = join(scratch, 'usage.ts');
  writeFileSync(
    file,
    `${usage
      .replace("'postgresql:///yonder_lab?host=/run/postgresql'", JSON.stringify(ledger.url))
      .replace("from '@yonder/store-postgres'", `from ${JSON.stringify(join(HERE, 'index.ts'))}`)}
export { jobs };\n`,
  );
  const module = (await import(pathToFileURL(file).href)) as { jobs: unknown };
  expect(module.jobs).toEqual([]);
});
