/** ssh2's optional import, looked up by Node only when ssh2 is first loaded: checked before ssh2 is, so no other user can plant it on the way up from wherever ssh2 is installed. */
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { UntrustedPathError, YonderError } from '@yonder/core';
import { trustedRealPath } from '@yonder/core/backend-kit';

/**
 * What ssh2 requires inside a `try` (lib/protocol/constants.js): used when it is there, and
 * where it is not (its native build is optional, and often fails), looked for in every
 * `node_modules` above ssh2 up to `/` and in CommonJS's global folders.
 */
const OPTIONAL_IMPORTS = [{ name: 'cpu-features', importer: 'lib/protocol/constants.js' }];

let checked: string | undefined;

/**
 * Check every place Node's `require` would look for ssh2's optional imports, in its order,
 * until one is found: each directory on the way must be trusted (the user's or root's, written
 * by nobody else) or, where the package is absent, impossible for anyone else to create — so
 * a CLI installed below a directory others may write to (a sticky /tmp) without the optional
 * package is refused, naming that directory, instead of running what another user put there.
 * Done once per process; `from` (for tests) is a file beside which ssh2 is resolved.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the directory, its owner and mode, and the fix.
 */
export function checkSsh2OptionalImports(from: string = import.meta.url): void {
  if (checked === from) return;
  try {
    checkLookups(from);
  } catch (error) {
    if (!UntrustedPathError.isInstance(error)) throw error;
    throw new UntrustedPathError({
      ...error,
      message: `${error.message} The ssh2 transport is not loaded until then; the openssh transport (--transport openssh) does not use ssh2.`,
    });
  }
  checked = from;
}

function checkLookups(from: string): void {
  const ssh2 = packageDirectory(createRequire(from).resolve('ssh2'));
  const verified = new Set<string>();
  for (const { name, importer } of OPTIONAL_IMPORTS) {
    const options = {
      role: `the place ssh2 looks for its optional ${name}`,
      allowRootOwner: true,
      verified,
    };
    // Node looks up from where the importing file really is (every link on the way to it
    // followed, a link inside ssh2's own package too): from there, as Node will.
    const real = trustedRealPath(join(ssh2, importer), options);
    if (real === undefined) continue; // this ssh2 has no such file: nothing of it asks
    const lookup = createRequire(real);
    let found: string | undefined;
    try {
      // Node keeps this answer for the same file's require, so what is found here is what loads.
      found = lookup.resolve(name);
    } catch {
      found = undefined; // not installed: every place it could appear is checked below
    }
    if (found !== undefined) {
      // The file that will load, wherever its package points (a `main` outside it, a link),
      // and the way to it.
      trustedRealPath(found, options);
      continue;
    }
    // Not found: Node looks again at each of these whenever ssh2 is loaded. In each place it
    // tries the name as a file (with each extension) and as a directory: each must be trusted,
    // or absent and impossible for anyone else to create. One that is there but does not load
    // is a broken install, and refused rather than guessed at.
    for (const directory of lookup.resolve.paths(name) ?? []) {
      const candidate = join(directory, name);
      for (const extension of ['', '.js', '.json', '.node']) {
        const there = trustedRealPath(candidate + extension, {
          ...options,
          absentMustStayAbsent: true,
        });
        if (there !== undefined)
          throw new YonderError(
            'E_UNTRUSTED_PATH',
            `ssh2's optional ${name} at ${candidate + extension} is there but cannot be loaded (a broken or partial install), so what it would load later cannot be checked. Fix: remove it, or install ${name} again.`,
          );
      }
    }
  }
}

/** The directory of the package whose main file is `main` (the nearest `node_modules/ssh2` above it). */
function packageDirectory(main: string): string {
  for (let dir = dirname(main); dirname(dir) !== dir; dir = dirname(dir))
    if (dir.endsWith(`${sep}node_modules${sep}ssh2`)) return dir;
  return dirname(dirname(main));
}
