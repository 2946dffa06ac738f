/** ssh2's optional import, looked up by Node only when ssh2 is first loaded: checked before ssh2 is, so no other user can plant it on the way up from wherever ssh2 is installed. */
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { UntrustedPathError } from '@yonder/core';
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
    const lookup = createRequire(join(ssh2, importer));
    let found: string | undefined;
    try {
      found = lookup.resolve(name);
    } catch {
      found = undefined; // not installed: every place it could appear is checked below
    }
    const options = {
      role: `the place ssh2 looks for its optional ${name}`,
      allowRootOwner: true,
      verified,
    };
    for (const directory of lookup.resolve.paths(name) ?? []) {
      // Node tries the name as a file (with each extension) and as a directory, in each place;
      // each must be trusted, or absent for good. Where it is found (a link followed: pnpm's
      // layout), the lookup ends, and the file found must be trusted too.
      const candidate = join(directory, name);
      const here = ['', '.js', '.json', '.node'].some((extension) => {
        const real = trustedRealPath(candidate + extension, {
          ...options,
          absentMustStayAbsent: true,
        });
        return (
          found !== undefined &&
          real !== undefined &&
          (found === real || found.startsWith(real + sep))
        );
      });
      if (here) {
        trustedRealPath(found as string, options);
        break;
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
