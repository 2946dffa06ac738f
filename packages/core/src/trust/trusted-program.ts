/** A program yonder starts on this machine by a name the user gave (an editor), found as exec finds it and judged by the one trust rule: the twin of sh's `trusted_program`. */
import { accessSync, constants, statSync } from 'node:fs';
import { checkTrustedPath } from './check-trusted-path.js';

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Find `name` as exec would — as given when it holds a `/`, else the first executable regular
 * file of that name in the entries of `searchPath` — and judge it by the trust rule
 * (checkTrustedPath, root's allowed: programs root installed). Returns its path, or undefined
 * when there is none.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` when it, or a directory on the way to it, is one
 *   another user could change, naming `role`, the path, its owner and mode, and the fix.
 */
export function trustedProgram(name: string, searchPath: string, role: string): string | undefined {
  const candidates = name.includes('/')
    ? [name]
    : searchPath.split(':').map((directory) => `${directory === '' ? '.' : directory}/${name}`);
  const found = candidates.find(isExecutableFile);
  if (found === undefined) return undefined;
  checkTrustedPath(found, { role, type: 'file', allowRootOwner: true });
  return found;
}
