/** Every package of the workspace exports as VERSION the version in its package.json, in its source under test and in its build. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../../', import.meta.url);
const PACKAGES = ['packages', 'examples'].flatMap((folder) =>
  readdirSync(new URL(`${folder}/`, ROOT))
    .map((name) => new URL(`${folder}/${name}/`, ROOT))
    // Packages that are built (tsup); the private test helpers export their source, unbuilt.
    .filter((directory) => existsSync(new URL('tsup.config.ts', directory))),
);

describe('VERSION', () => {
  it('is found in every package', () => {
    expect(PACKAGES.length).toBeGreaterThanOrEqual(7);
  });

  for (const directory of PACKAGES) {
    const { name, version } = JSON.parse(
      readFileSync(new URL('package.json', directory), 'utf8'),
    ) as { name: string; version: string };
    it(`of ${name} is ${version}`, async () => {
      const source = (await import(new URL('src/index.ts', directory).href)) as { VERSION: string };
      const built = (await import(new URL('dist/index.js', directory).href)) as { VERSION: string };
      expect({ source: source.VERSION, built: built.VERSION }).toEqual({
        source: version,
        built: version,
      });
    });
  }
});
