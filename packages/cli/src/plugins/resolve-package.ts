/** Where plugin packages are found: by Node's own resolution, from trusted places only, never the working directory. */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { YonderError } from '@yonder/core';
import { checkTrustedPath, parseJson } from '@yonder/core/backend-kit';
import { isSameOrAbove, LookupCheck } from './check-lookup.js';

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

/** Where npm puts global packages for this node: `<prefix>/lib/node_modules` (packages are never looked for in NODE_PATH, though a CommonJS plugin's `require` does look there: see LookupCheck.commonJs). */
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

/** Whether `directory` is the one `own` resolves from. */
function isOwn(directory: string, own: OwnResolution | undefined): boolean {
  return own !== undefined && resolve(own.directory) === resolve(directory);
}

/** Node's resolution of `name` from a module in `directory`; null when it is not installed there. */
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
 * Where Node's lookup of `name` from `directory` finds the package: the first
 * `node_modules/<name>` there or in a directory above that is a directory, as found (links not
 * yet followed, so that a link another user put on the way is seen), or null.
 */
function lookedUp(name: string, directory: string): string | null {
  let dir = resolve(directory);
  for (;;) {
    const candidate = join(dir, 'node_modules', name);
    if (statSync(candidate, { throwIfNoEntry: false })?.isDirectory()) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

export interface FindPackageOptions {
  /** The directories resolved from in turn (the CLI's own installation, the config file's directory). */
  from: readonly string[];
  /** Global install directories (`<prefix>/lib/node_modules`), after them. */
  global?: readonly string[];
  /** The CLI's own directory, whose packages are held to what its installation is. */
  ownDirectory?: string;
  /** Node's own resolution from the CLI's directory, where the runtime has it. */
  own?: OwnResolution;
  /** For NODE_PATH and HOME: where CommonJS looks too (process.env by default). */
  env?: NodeJS.ProcessEnv;
}

/** The lookup checks of this process: the CLI's own installation's, and everything else's. */
let ownCheck: LookupCheck | undefined;
let otherCheck: LookupCheck | undefined;

/**
 * Find an installed package by name, resolved as Node resolves an import (its `exports`,
 * conditions `node` and `import`; `node_modules` of each directory and its parents) from each
 * directory of `from` in turn (the CLI's own installation, the config file's directory), then
 * from the global install directories. The working directory is never searched. Before it is
 * resolved, everything the lookup could pass through is checked (LookupCheck), so that nothing
 * another user could make or change there decides what is found; then the package's directory
 * as found (it must be a `node_modules` entry: a package.json above naming itself is not a
 * plugin), the file it resolves to (inside that directory), the chain its own imports resolve
 * from, and where CommonJS looks. Plugin code runs as the user.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` when what is found could be someone else's;
 * YonderError `E_PLUGIN` when the package is there but cannot be resolved, or not as a package.
 */
export async function findPackage(
  name: string,
  options: FindPackageOptions,
): Promise<{ dir: string; entry: string } | null> {
  const { own, ownDirectory } = options;
  // `<prefix>/lib/node_modules/NAME` is what a module in `<prefix>/lib` resolves.
  const starts = [...options.from, ...(options.global ?? []).map((dir) => dirname(dir))];
  const ownReal = ownDirectory === undefined ? undefined : realpathSync(ownDirectory);
  for (const start of starts) {
    const fromOwn = ownDirectory !== undefined && resolve(start) === resolve(ownDirectory);
    // One check for each kind, kept for the process: what was found trusted once stays so.
    if (fromOwn) ownCheck ??= new LookupCheck(ownReal);
    else otherCheck ??= new LookupCheck(undefined);
    const check = (fromOwn ? ownCheck : otherCheck) as LookupCheck;
    check.chain(name, start);
    const entry = await resolveFrom(name, start, own);
    if (entry === null) continue;
    const found = lookedUp(name, start);
    if (found === null || !isSameOrAbove(realpathSync(found), entry)) {
      throw new YonderError(
        'E_PLUGIN',
        `The package ${name} (from ${start}) resolves to ${entry}, which is not in the node_modules/${name} Node's lookup found (${found ?? 'none'}); refusing it.`,
      );
    }
    checkTrustedPath(found, {
      role: `the plugin ${name}`,
      type: 'directory',
      allowRootOwner: true,
    });
    checkTrustedPath(entry, { role: `the plugin ${name}`, type: 'file', allowRootOwner: true });
    check.commonJs(options.env ?? process.env);
    const dir = packageDirectoryOf(entry, name) ?? dirname(entry);
    check.chain(name, dir);
    return { dir, entry };
  }
  return null;
}

/** The version in a package's package.json. */
export function packageVersion(dir: string): string {
  const version = readManifest(dir)?.version;
  return typeof version === 'string' ? version : '?';
}
