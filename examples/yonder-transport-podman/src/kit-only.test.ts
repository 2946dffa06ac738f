/** The example imports nothing of yonder's beyond the public kit: what a third party has. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const PUBLIC = new Set([
  '@yonder/core',
  '@yonder/core/backend-kit',
  '@yonder/core/transport-kit',
  '@yonder/core/conformance',
]);

it('imports of @yonder/* are the public entry points only (and test helpers in tests)', () => {
  const dir = new URL('.', import.meta.url).pathname;
  const wrong: string[] = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.ts'))) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const match of text.matchAll(/from '(@yonder\/[^']+)'/g)) {
      const name = match[1] as string;
      const allowed =
        PUBLIC.has(name) || (name === '@yonder/test-helpers' && /\.test\.ts$|^test-/.test(file));
      if (!allowed) wrong.push(`${file}: ${name}`);
    }
  }
  expect(wrong).toEqual([]);
  // And it does import the kit (the check is not vacuous).
  expect(readFileSync(join(dir, 'podman-transport.ts'), 'utf8')).toContain(
    "from '@yonder/core/transport-kit'",
  );
});
