/** Everything Node's lookup of a plugin and of its imports can pass through, checked as the plugin is: each directory looked in, each link on the way, where CommonJS looks too. */
import { lstatSync, readdirSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { YonderError } from '@yonder/core';
import { checkTrustedPath, trustedRealPath } from '@yonder/core/backend-kit';

/** Whether `dir` is `inner` or one of the directories above it. */
export function isSameOrAbove(dir: string, inner: string): boolean {
  return inner === dir || inner.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/** The topmost `node_modules` directory that holds `path` (itself, or one above it), or `path`. */
function topModules(path: string): string {
  let top = path;
  for (let dir = path; ; dir = dirname(dir)) {
    if (basename(dir) === 'node_modules') top = dir;
    if (dirname(dir) === dir) return top;
  }
}

/** How deep npm's nested `node_modules` are followed (deeper than any real tree). */
const MAX_NESTING = 32;

/** What is at `path` (not following a link), or undefined: nothing, or nothing reachable. */
function lstatOrNone(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Forget what was added to `set` after its first `size` entries (a Set keeps its order). */
function forgetAfter(set: Set<string>, size: number): void {
  [...set].slice(size).forEach((entry) => {
    set.delete(entry);
  });
}

/** Where CommonJS `require` also looks, whatever the package: NODE_PATH, ~/.node_modules, ~/.node_libraries (as Node, only with HOME set), `<prefix>/lib/node`. */
export function commonJsDirectories(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME;
  return [
    ...(env.NODE_PATH ?? '')
      .split(delimiter)
      .filter((entry) => entry !== '')
      .map((entry) => resolve(entry)),
    ...(home ? [join(home, '.node_modules'), join(home, '.node_libraries')] : []),
    join(dirname(dirname(process.execPath)), 'lib', 'node'),
  ];
}

/**
 * The checks of one plugin's lookup, each directory and link once. Node resolves a bare import
 * from the nearest `package.json` above the importer that names itself so (a package's
 * self-reference), then from `node_modules` in the importer's directory and each one above,
 * looked up again whenever an import asks (so also long after the plugin loaded). So, from
 * every directory on such a chain, its `package.json` and its `node_modules` must be trusted
 * (the user's or root's, written by no one else, every link on the way too) or absent and
 * impossible for another user to create (below a directory all may write to, as /tmp, they
 * could make it at any time) — except, for a package of the CLI's own installation, in a
 * directory above the CLI itself, where its own modules already look. Every package linked
 * into such a `node_modules`, or into the `node_modules` of any package below it (a dependency
 * of a dependency), from outside its tree (as `npm link` makes) is followed, with its own chain.
 */
export class LookupCheck {
  private readonly verified = new Set<string>();
  private readonly walked = new Set<string>();
  private readonly scanned = new Set<string>();
  /** Paths in trees found to be directories, not links (or not). */
  private readonly realDirectories = new Map<string, boolean>();

  /** The package being looked up, for messages. */
  private name = '';

  /** `ownDirectory`: the CLI's real directory, for the packages of its installation. */
  constructor(private readonly ownDirectory: string | undefined) {}

  /**
   * `dir` and every directory above it, and each package linked in from elsewhere on the way.
   * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the path and the fix.
   */
  chain(name: string, dir: string): void {
    this.name = name;
    const walked = this.walked.size;
    const scanned = this.scanned.size;
    try {
      this.walk(resolve(dir));
    } catch (error) {
      // Nothing of a refused walk is remembered: the next package is checked all over again.
      forgetAfter(this.walked, walked);
      forgetAfter(this.scanned, scanned);
      throw error;
    }
  }

  private walk(dir: string): void {
    const work = [dir];
    for (let next = work.pop(); next !== undefined; next = work.pop()) {
      for (let at = next; !this.walked.has(at); at = dirname(at)) {
        const options = {
          allowRootOwner: true,
          absentMustStayAbsent:
            this.ownDirectory === undefined || !isSameOrAbove(at, this.ownDirectory),
          verified: this.verified,
        };
        const modules = join(at, 'node_modules');
        const exists = checkTrustedPath(modules, {
          ...options,
          role: `a directory the plugin ${this.name} loads its dependencies from`,
          type: 'directory',
        });
        if (exists) work.push(...this.linkedFromOutside(modules));
        checkTrustedPath(join(at, 'package.json'), {
          ...options,
          role: `a package.json the plugin ${this.name} or its imports could be resolved by`,
          type: 'file',
        });
        this.walked.add(at);
        if (dirname(at) === at) break;
      }
    }
  }

  /** Every directory CommonJS searches for every package: trusted, or absent and uncreatable by others. */
  commonJs(env: NodeJS.ProcessEnv): void {
    for (const dir of commonJsDirectories(env))
      checkTrustedPath(dir, {
        role: 'a directory CommonJS modules are looked up in (NODE_PATH, or Node’s own)',
        type: 'directory',
        allowRootOwner: true,
        absentMustStayAbsent: true,
        verified: this.verified,
      });
  }

  /**
   * The packages in `modules` (scoped ones too) that are links, and those in the `node_modules`
   * of every package below it (npm's nested layout, pnpm's `.pnpm` store), since Node resolves
   * a dependency of a dependency from there: each link, and every link on its way, must be the
   * user's or root's; the real directories of those that lead out of the tree `modules` is in
   * are returned, to be walked in turn.
   */
  private linkedFromOutside(modules: string): string[] {
    const real = realpathSync.native(modules);
    if (this.scanned.has(real)) return [];
    const tree = topModules(real);
    const outside: string[] = [];
    // Real directories scanned already (pnpm links thousands of times to the same few).
    const seen = new Set<string>();
    /** Check the link at `path`; its real target, or undefined (dangling, or no directory). */
    const follow = (path: string, shallow: boolean): string | undefined => {
      // Deeper down, a link that stays in the tree (pnpm's thousands) costs a readlink and an
      // lstat of each directory it names not seen before. One that leads out, or nowhere, or
      // past another link, is checked in full.
      const inside = shallow ? undefined : this.staysInside(path, tree);
      if (inside !== undefined) return inside;
      // A dangling link (an old `npm link` to a checkout since removed) points where Node
      // would load from once something is there: the place must be one no one else can make.
      const target = trustedRealPath(path, {
        role: `a package linked into ${dirname(path)}, which the plugin ${this.name} may load`,
        allowRootOwner: true,
        absentMustStayAbsent: true,
        verified: this.verified,
      });
      if (target !== undefined && !isSameOrAbove(tree, target)) outside.push(target);
      return target !== undefined && lstatOrNone(target)?.isDirectory() ? target : undefined;
    };
    /** `dir` if it is in the tree (one outside is walked, its node_modules scanned, anyway). */
    const within = (dir: string | undefined): string | undefined =>
      dir !== undefined && isSameOrAbove(tree, dir) ? dir : undefined;
    /** Once per real directory: what `scan` does with it. */
    const once = (dir: string | undefined, scan: (dir: string) => void): void => {
      if (dir === undefined || seen.has(dir)) return;
      seen.add(dir);
      scan(dir);
    };
    // A package's own node_modules, a link or not: Node looks in what it holds, wherever it is.
    const nested = (dir: string, depth: number): void =>
      once(dir, () => {
        if (this.realDirectories.get(dir) === true) return visit(dir, depth + 1);
        const info = lstatOrNone(dir);
        this.realDirectories.set(dir, info?.isDirectory() === true);
        if (info?.isSymbolicLink()) once(follow(dir, false), (real) => visit(real, depth + 1));
        else if (info?.isDirectory()) visit(dir, depth + 1);
      });
    /** The package at `dir` (a real directory): its own node_modules. */
    const inPackage = (dir: string, depth: number): void =>
      nested(join(dir, 'node_modules'), depth);
    const scope = (dir: string, depth: number): void => {
      for (const scoped of readdirSync(dir, { withFileTypes: true })) {
        const inScope = join(dir, scoped.name);
        if (scoped.isSymbolicLink())
          once(within(follow(inScope, depth === 0)), (real) => inPackage(real, depth));
        else if (scoped.isDirectory()) inPackage(inScope, depth);
      }
    };
    const visit = (dir: string, depth: number): void => {
      // Node would load from deeper down too: a tree this scan cannot finish is refused.
      if (depth > MAX_NESTING)
        throw new YonderError(
          'E_UNTRUSTED_PATH',
          `${dir} is nested more than ${MAX_NESTING} node_modules deep below ${modules}, too deep to check what the plugin ${this.name} may load from it; reinstall the plugin (npm dedupe).`,
        );
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isSymbolicLink()) {
          // A scope linked in holds packages; anything else linked in is one.
          // (One outside the tree is walked, its own node_modules too, as a first-level one.)
          const real = follow(path, depth === 0);
          if (entry.name.startsWith('@')) once(real, (target) => scope(target, depth));
          else if (!entry.name.startsWith('.'))
            once(within(real), (target) => inPackage(target, depth));
          continue;
        }
        if (!entry.isDirectory()) continue;
        this.realDirectories.set(path, true);
        if (entry.name === '.pnpm') {
          nested(join(path, 'node_modules'), depth);
          for (const store of readdirSync(path, { withFileTypes: true })) {
            const stored = join(path, store.name);
            if (store.isSymbolicLink())
              once(within(follow(stored, false)), (real) => inPackage(real, depth));
            else if (store.isDirectory()) {
              this.realDirectories.set(stored, true);
              inPackage(stored, depth);
            }
          }
        } else if (entry.name.startsWith('@')) scope(path, depth);
        else if (!entry.name.startsWith('.')) inPackage(path, depth);
      }
    };
    visit(modules, 0);
    this.scanned.add(real);
    return outside;
  }

  /**
   * Where a link leads, when its text leads inside `tree` (as pnpm's relative links do) and
   * passes no other link on the way (each directory below the tree's top, looked at once per
   * check): where it really leads is what its text spells. Its letters alone are not
   * enough: `../vendor/x` past a link `vendor` in a package's own directory (where this scan
   * never looks) leads wherever that one does, and `..` after a link climbs from its target.
   */
  private staysInside(path: string, tree: string): string | undefined {
    let text: string;
    try {
      text = readlinkSync(path);
    } catch {
      return undefined;
    }
    if (isAbsolute(text)) return undefined;
    // `..` after a name climbs from where that name really leads, which `resolve` cannot know:
    // only the leading ones (from the link's own, real, directory) are taken at their letters.
    const parts = text.split('/').filter((part) => part !== '' && part !== '.');
    if (parts.slice(parts.findIndex((part) => part !== '..')).includes('..')) return undefined;
    const spelled = resolve(dirname(path), text);
    if (!isSameOrAbove(tree, spelled)) return undefined;
    // Each directory from the tree's top down to where the text leads is one, not a link.
    let at = tree;
    for (const name of spelled.slice(tree.length).split(sep).filter(Boolean)) {
      at = join(at, name);
      let real = this.realDirectories.get(at);
      if (real === undefined) {
        real = lstatOrNone(at)?.isDirectory() === true;
        this.realDirectories.set(at, real);
      }
      if (!real) return undefined;
    }
    return spelled;
  }
}
