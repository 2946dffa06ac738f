import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

/** What of yonder's this package may import: the public kit, nothing else. */
const ALLOWED = new Set(['@yonder/core', '@yonder/core/backend-kit', '@yonder/core/conformance']);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? files(join(dir, entry.name))
      : /\.(ts|js|mts|cts)$/.test(entry.name)
        ? [join(dir, entry.name)]
        : [],
  );
}

/** Every module specifier of a file: static and dynamic imports, exports from, require. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(
    /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)(['"])([^'"]+)\1/g,
  ))
    found.push(match[2] as string);
  return found;
}

it('imports nothing of yonder’s but @yonder/core, @yonder/core/backend-kit and @yonder/core/conformance', () => {
  const root = join(import.meta.dirname, '..');
  const offending: string[] = [];
  for (const file of [...files(join(root, 'src')), join(root, 'tsup.config.ts')])
    for (const specifier of specifiers(readFileSync(file, 'utf8')))
      if (specifier.startsWith('@yonder/') && !ALLOWED.has(specifier))
        offending.push(`${file}: ${specifier}`);
  expect(offending).toEqual([]);
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const dependencies = Object.keys({
    ...manifest.dependencies,
    ...manifest.peerDependencies,
  }).filter((name) => name.startsWith('@yonder/'));
  expect(dependencies).toEqual(['@yonder/core']);
});

it('the check sees every form of import (so it can fail)', () => {
  // Spelled with ${y} so that this file's own scan does not find them.
  const y = '@yonder';
  expect(
    specifiers(
      `import { a } from '${y}/store-fs';\nexport * from "${y}/backend-ssh";\nconst x = await import('${y}/cli');\nimport '${y}/test-helpers';\nrequire('${y}/ui')`,
    ),
  ).toEqual([
    '@yonder/store-fs',
    '@yonder/backend-ssh',
    '@yonder/cli',
    '@yonder/test-helpers',
    '@yonder/ui',
  ]);
});
