/** A Vite plugin that gives source under test what tsup's `define` gives the build: `__PACKAGE_VERSION__`, the version in the nearest package.json. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Plugin } from 'vite';

const IDENTIFIER = /\b__PACKAGE_VERSION__\b/g;

/**
 * One `define` per package: vitest's own `define` is one value for every file, and the packages
 * of this workspace are versioned apart. Runs after TypeScript is stripped, so the
 * `declare const` beside each use is gone by then.
 */
export function packageVersionPlugin(): Plugin {
  const versions = new Map<string, string>();
  const versionAt = (directory: string): string => {
    const known = versions.get(directory);
    if (known !== undefined) return known;
    let version: string;
    try {
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
        version?: unknown;
      };
      if (typeof manifest.version !== 'string')
        throw new Error(`${join(directory, 'package.json')} has no version`);
      version = manifest.version;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      const parent = dirname(directory);
      if (parent === directory) throw new Error('__PACKAGE_VERSION__ used outside any package');
      version = versionAt(parent);
    }
    versions.set(directory, version);
    return version;
  };
  return {
    name: 'yonder:package-version',
    transform(code, id) {
      if (!code.includes('__PACKAGE_VERSION__')) return null;
      const version = JSON.stringify(versionAt(dirname(id.split('?')[0] as string)));
      return { code: code.replace(IDENTIFIER, version), map: null };
    },
  };
}
