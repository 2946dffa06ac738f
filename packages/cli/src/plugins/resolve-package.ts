/** Where plugin packages are found: by Node's own resolution, from trusted places only, never the working directory. */
import { readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { YonderError } from '@yonder/core';
import { checkTrustedPath, parseJson } from '@yonder/core/backend-kit';

/**
 * Node's own resolution from one directory: `import.meta.resolve` of a module there (the CLI's
 * own install), used instead of import-meta-resolve for that directory, which then need not be
 * loaded at all (about 10 ms of every command that loads a bundled package).
 */
export interface OwnResolution {
  directory: string;
  resolve: (specifier: string) => string;
}

/** import-meta-resolve (Node's algorithm from any directory), loaded when first needed. */
let importMetaResolve: Promise<(specifier: string, parent: string) => string> | undefined;

/** Where npm puts global packages for this node: `<prefix>/lib/node_modules` (ESM ignores NODE_PATH, and so does yonder). */
export function globalModuleDirectories(env: NodeJS.ProcessEnv): string[] {
  const dirs = [join(dirname(dirname(process.execPath)), 'lib', 'node_modules')];
  if (env.npm_config_prefix) dirs.unshift(join(env.npm_config_prefix, 'lib', 'node_modules'));
  return dirs;
}

function readManifest(dir: string): { name?: unknown; version?: unknown } | null {
  try {
    const parsed = parseJson(readFileSync(join(dir, 'package.json'), 'utf8'));
    return parsed.ok && typeof parsed.value === 'object' && parsed.value !== null
      ? (parsed.value as { name?: unknown; version?: unknown })
      : null;
  } catch {
    return null;
  }
}

/** The directory of the package `name` that holds `file`: the nearest package.json of that name above it. */
function packageDirectoryOf(file: string, name: string): string | null {
  let dir = dirname(file);
  for (;;) {
    if (readManifest(dir)?.name === name) return dir;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** Node's resolution of `name` from a module in `directory`; null when it is not installed there. */
function isOwn(directory: string, own: OwnResolution | undefined): boolean {
  return own !== undefined && resolve(own.directory) === resolve(directory);
}

async function resolveFrom(
  name: string,
  directory: string,
  own: OwnResolution | undefined,
): Promise<string | null> {
  const parent = pathToFileURL(join(resolve(directory), 'yonder-plugin-resolution.js')).href;
  // From the directory `own` stands for, Node resolves the name itself, exactly as from `parent`.
  const fromOwn = isOwn(directory, own);
  if (!fromOwn && importMetaResolve === undefined)
    importMetaResolve = import('import-meta-resolve').then((module) => module.resolve);
  const resolveElsewhere = fromOwn ? null : await importMetaResolve;
  let url: string;
  try {
    url = resolveElsewhere ? resolveElsewhere(name, parent) : (own as OwnResolution).resolve(name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') return null;
    throw new YonderError(
      'E_PLUGIN',
      `The package ${name} (from ${directory}) cannot be loaded: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (!url.startsWith('file:')) {
    throw new YonderError('E_PLUGIN', `${name} is not a package (it resolves to ${url}).`);
  }
  return fileURLToPath(url);
}

/**
 * The plugin's own imports resolve, as Node resolves them, from a `node_modules` in its
 * directory or any directory above it, looked up each time an import asks (so also long after
 * the plugin loaded). Each that exists must be trusted too. Outside the CLI's own installation,
 * one that does not exist must stay so: below a directory all may write to (the sticky /tmp),
 * another user could make it at any time. (The CLI's own modules resolve their imports up the
 * same directories before any plugin loads, so its bundled plugins are held to what it is.)
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the directory.
 */
function checkDependencyDirectories(name: string, packageDir: string, ownInstall: boolean): void {
  let dir = packageDir;
  for (;;) {
    const modules = basename(dir) === 'node_modules' ? dir : join(dir, 'node_modules');
    checkTrustedPath(modules, {
      role: `a directory the plugin ${name} loads its dependencies from`,
      type: 'directory',
      allowRootOwner: true,
      absentMustStayAbsent: !ownInstall,
    });
    const parent = dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

/**
 * Find an installed package by name, resolved as Node resolves an import (its `exports`,
 * conditions `node` and `import`; `node_modules` of each directory and its parents) from each
 * directory of `from` in turn (the CLI's own installation, the config file's directory), then
 * from the global install directories in `extra`. The working directory is never searched.
 * The file found, every directory above it, and every `node_modules` its own imports could
 * resolve from must be trusted (the user's or root's, written by no one else), and outside the
 * CLI's own installation none of those may be left for another user to create, as plugin code
 * runs as the user. `own` resolves from the CLI's own directory with Node itself.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` when what is found could be someone else's;
 * YonderError `E_PLUGIN` when the package is there but cannot be resolved.
 */
export async function findPackage(
  name: string,
  from: readonly string[],
  extra: readonly string[] = [],
  own?: OwnResolution,
): Promise<{ dir: string; entry: string } | null> {
  // `<prefix>/lib/node_modules/NAME` is what a module in `<prefix>/lib` resolves.
  const starts = [...from, ...extra.map((dir) => dirname(dir))];
  for (const start of starts) {
    const entry = await resolveFrom(name, start, own);
    if (entry === null) continue;
    checkTrustedPath(entry, {
      role: `the plugin ${name}`,
      type: 'file',
      allowRootOwner: true,
    });
    const dir = packageDirectoryOf(entry, name) ?? dirname(entry);
    checkDependencyDirectories(name, dir, isOwn(start, own));
    return { dir, entry };
  }
  return null;
}

/** The version in a package's package.json. */
export function packageVersion(dir: string): string {
  const version = readManifest(dir)?.version;
  return typeof version === 'string' ? version : '?';
}
