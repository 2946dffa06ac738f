import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Where npm puts global packages for this node: `<prefix>/lib/node_modules` (ESM ignores NODE_PATH, and so does yonder). */
export function globalModuleDirectories(env: NodeJS.ProcessEnv): string[] {
  const dirs = [join(dirname(dirname(process.execPath)), 'lib', 'node_modules')];
  if (env.npm_config_prefix) dirs.unshift(join(env.npm_config_prefix, 'lib', 'node_modules'));
  return dirs;
}

function exportTarget(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = exportTarget(item);
      if (found) return found;
    }
    return null;
  }
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    for (const condition of ['import', 'node', 'default']) {
      if (condition in record) {
        const found = exportTarget(record[condition]);
        if (found) return found;
      }
    }
  }
  return null;
}

/** The entry file a package's package.json names for `import` (its "." export, else main). */
export function packageEntry(packageDir: string): string | null {
  let manifest: { exports?: unknown; main?: string; module?: string };
  try {
    manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  } catch {
    return null;
  }
  let target: string | null = null;
  if (manifest.exports !== undefined) {
    const exports = manifest.exports;
    const root =
      typeof exports === 'object' &&
      exports !== null &&
      !Array.isArray(exports) &&
      Object.keys(exports).some((key) => key.startsWith('.'))
        ? (exports as Record<string, unknown>)['.']
        : exports;
    target = exportTarget(root);
  }
  target ??= manifest.main ?? 'index.js';
  const file = join(packageDir, target);
  return existsSync(file) ? file : null;
}

/**
 * Find an installed package by name from a directory, looking in `node_modules` of it and of
 * every parent, as Node does; then in the extra directories given (global installs).
 */
export function findPackage(
  name: string,
  from: readonly string[],
  extra: readonly string[] = [],
): { dir: string; entry: string } | null {
  const candidates: string[] = [];
  for (const start of from) {
    let dir = resolve(start);
    for (;;) {
      candidates.push(join(dir, 'node_modules', name));
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  for (const dir of extra) candidates.push(join(dir, name));
  for (const dir of candidates) {
    if (!existsSync(join(dir, 'package.json'))) continue;
    const entry = packageEntry(dir);
    if (entry) return { dir, entry };
  }
  return null;
}

/** The version in a package's package.json. */
export function packageVersion(dir: string): string {
  try {
    return String(
      (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: string })
        .version ?? '?',
    );
  } catch {
    return '?';
  }
}
