/**
 * A world-readable copy of the built CLI for tests that run it as another user: the checkout
 * may sit in a directory only root can enter (CI clones into /root), so the built packages and
 * their dependencies are copied, links resolved, into a fresh directory under /tmp.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { REPOSITORY_ROOT } from './repository.js';

/**
 * Where the installed packages are copied from: this repository, or the built checkout that
 * `YONDER_TEST_CLI_FROM` names (to watch each attack succeed against an older yonder).
 */
const SOURCE = process.env.YONDER_TEST_CLI_FROM ?? REPOSITORY_ROOT;

export interface InstalledCli {
  /** The directory holding `node_modules/`. */
  root: string;
  /** `node_modules/@yonder/cli/dist/bin.js` in it. */
  bin: string;
  /** Which packages it has. */
  packages: string[];
  remove(): void;
}

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
}

function manifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** The workspace's own packages, by name. */
function workspacePackages(): Map<string, string> {
  const found = new Map<string, string>();
  for (const name of readdirSync(join(SOURCE, 'packages'))) {
    const dir = join(SOURCE, 'packages', name);
    if (existsSync(join(dir, 'package.json'))) found.set(manifest(dir).name, realpathSync(dir));
  }
  return found;
}

/** The directory `dependency` is installed in for a package in `from`, as Node would find it. */
function dependencyDirectory(dependency: string, from: string): string {
  let dir = from;
  for (;;) {
    const candidate = join(dir, 'node_modules', dependency);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`${dependency} (needed by ${from}) is not installed: run pnpm install`);
    }
    dir = parent;
  }
}

/**
 * Copy the built workspace packages `names`, each with its runtime dependencies (flat, links
 * resolved), into `<root>/node_modules`. Returns every package copied.
 * @throws Error when a package is not built or a dependency is not installed.
 */
export function installPackages(root: string, names: readonly string[]): string[] {
  const workspace = workspacePackages();
  const modules = join(root, 'node_modules');
  const copied = new Map<string, string>();
  const queue: Array<{ name: string; from: string | null }> = names.map((name) => ({
    name,
    from: null,
  }));
  while (queue.length > 0) {
    const { name, from } = queue.shift() as (typeof queue)[number];
    const source = workspace.get(name) ?? dependencyDirectory(name, from as string);
    const previous = copied.get(name);
    if (previous !== undefined) {
      if (previous !== source)
        throw new Error(`Two versions of ${name} are needed (${previous}, ${source})`);
      continue;
    }
    copied.set(name, source);
    const target = join(modules, name);
    mkdirSync(target, { recursive: true });
    if (workspace.has(name)) {
      if (!existsSync(join(source, 'dist')))
        throw new Error(`${name} is not built (${join(source, 'dist')} is missing): pnpm build`);
      cpSync(join(source, 'package.json'), join(target, 'package.json'));
      cpSync(join(source, 'dist'), join(target, 'dist'), { recursive: true, dereference: true });
    } else {
      cpSync(source, target, {
        recursive: true,
        dereference: true,
        filter: (path) => !relative(source, path).split(sep).includes('node_modules'),
      });
    }
    for (const dependency of Object.keys(manifest(source).dependencies ?? {}))
      queue.push({ name: dependency, from: source });
  }
  return [...copied.keys()];
}

/**
 * Install the built `@yonder/cli` (with core and store-fs) and the workspace packages named in
 * `extra` into a new world-readable directory in `under` (the system's temporary directory by
 * default). Packages not named are not there: a test can see what the CLI does without them.
 */
export function installCli(extra: readonly string[] = [], under = tmpdir()): InstalledCli {
  const root = mkdtempSync(join(under, 'yonder-shared-install-'));
  const packages = installPackages(root, ['@yonder/cli', ...extra]);
  chmodSync(root, 0o755);
  execFileSync('chmod', ['-R', 'a+rX,go-w', root]);
  return {
    root,
    bin: join(root, 'node_modules', '@yonder', 'cli', 'dist', 'bin.js'),
    packages,
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
