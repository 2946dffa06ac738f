/** Where plugin packages are found: by Node's own resolution, from trusted places only, never the working directory. */
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, delimiter, dirname, join, resolve, sep } from 'node:path';
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

/** Where npm puts global packages for this node: `<prefix>/lib/node_modules` (packages are never looked for in NODE_PATH, though a CommonJS plugin's `require` does look there: see commonJsDirectories). */
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

/** Whether `dir` is `inner` or one of the directories above it. */
function isSameOrAbove(dir: string, inner: string): boolean {
  return inner === dir || inner.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/**
 * The plugin's own imports resolve, as Node resolves them, from a `node_modules` in its
 * directory or any directory above it, looked up each time an import asks (so also long after
 * the plugin loaded). Each that exists must be trusted too, and so must every package linked
 * into one from elsewhere (as `npm link` makes), with the directories its own imports resolve
 * from. One that does not exist must stay so: below a directory all may write to (the sticky
 * /tmp), another user could make it at any time. Only where the CLI's own modules already look
 * (a directory above the CLI itself, for a package of its own installation) is that left as the
 * install made it.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the directory.
 */
function checkDependencyDirectories(
  name: string,
  packageDir: string,
  ownDirectory: string | undefined,
  seen: Set<string> = new Set(),
): void {
  if (seen.has(packageDir)) return;
  seen.add(packageDir);
  let dir = packageDir;
  for (;;) {
    const modules = basename(dir) === 'node_modules' ? dir : join(dir, 'node_modules');
    const exists = checkTrustedPath(modules, {
      role: `a directory the plugin ${name} loads its dependencies from`,
      type: 'directory',
      allowRootOwner: true,
      absentMustStayAbsent: ownDirectory === undefined || !isSameOrAbove(dir, ownDirectory),
    });
    if (exists && ownDirectory === undefined)
      for (const linked of linkedPackages(modules)) {
        checkTrustedPath(linked, {
          role: `a package linked into ${modules}, which the plugin ${name} may load`,
          type: 'directory',
          allowRootOwner: true,
        });
        checkDependencyDirectories(name, linked, ownDirectory, seen);
      }
    const parent = dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

/** The real directories of the packages in `modules` (scoped ones too) that are links to somewhere outside it. */
function linkedPackages(modules: string): string[] {
  const inside = realpathSync(modules);
  const found: string[] = [];
  const visit = (dir: string, depth: number): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && depth === 0 && entry.name.startsWith('@')) visit(path, 1);
      if (!entry.isSymbolicLink()) continue;
      let real: string;
      try {
        real = realpathSync(path);
      } catch {
        continue; // a dangling link: nothing for Node to load there
      }
      if (!isSameOrAbove(inside, real) && statSync(real).isDirectory()) found.push(real);
    }
  };
  visit(modules, 0);
  return found;
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

/** Where CommonJS `require` also looks, whatever the package: NODE_PATH, ~/.node_modules, ~/.node_libraries, `<prefix>/lib/node`. */
export function commonJsDirectories(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME || homedir();
  return [
    ...(env.NODE_PATH ?? '')
      .split(delimiter)
      .filter((entry) => entry !== '')
      .map((entry) => resolve(entry)),
    join(home, '.node_modules'),
    join(home, '.node_libraries'),
    join(dirname(dirname(process.execPath)), 'lib', 'node'),
  ];
}

/** Every directory `require` searches for every package, checked as a plugin's own: trusted, or absent and uncreatable by others. */
function checkCommonJsDirectories(env: NodeJS.ProcessEnv): void {
  for (const dir of commonJsDirectories(env))
    checkTrustedPath(dir, {
      role: 'a directory CommonJS modules are looked up in (NODE_PATH, or Node’s own)',
      type: 'directory',
      allowRootOwner: true,
      absentMustStayAbsent: true,
    });
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
  /** For NODE_PATH and HOME: where CommonJS looks too. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Find an installed package by name, resolved as Node resolves an import (its `exports`,
 * conditions `node` and `import`; `node_modules` of each directory and its parents) from each
 * directory of `from` in turn (the CLI's own installation, the config file's directory), then
 * from the global install directories. The working directory is never searched. The package's
 * directory as the lookup found it and the file it resolves to, with every directory above
 * them and every link on the way, must be trusted (the user's or root's, written by no one
 * else), as must every `node_modules` its own imports could resolve from (none of them left for
 * another user to create) and every directory CommonJS searches, as plugin code runs as the user.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` when what is found could be someone else's;
 * YonderError `E_PLUGIN` when the package is there but cannot be resolved.
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
    const entry = await resolveFrom(name, start, own);
    if (entry === null) continue;
    const found = lookedUp(name, start);
    checkTrustedPath(found ?? entry, {
      role: `the plugin ${name}`,
      type: found ? 'directory' : 'file',
      allowRootOwner: true,
    });
    checkTrustedPath(entry, {
      role: `the plugin ${name}`,
      type: 'file',
      allowRootOwner: true,
    });
    checkCommonJsDirectories(options.env ?? process.env);
    const dir = packageDirectoryOf(entry, name) ?? dirname(entry);
    const fromOwn = ownDirectory !== undefined && resolve(start) === resolve(ownDirectory);
    checkDependencyDirectories(name, dir, fromOwn ? ownReal : undefined);
    return { dir, entry };
  }
  return null;
}

/** The version in a package's package.json. */
export function packageVersion(dir: string): string {
  const version = readManifest(dir)?.version;
  return typeof version === 'string' ? version : '?';
}
