/** The files ssh reads (configs, known_hosts) trusted as OpenSSH trusts them: a regular file another user could change is refused. */
import { statSync } from 'node:fs';
import { checkTrustedPath } from '@yonder/core/backend-kit';

/**
 * Refuse `file` when another user could change it or a directory above it ("Bad owner or
 * permissions", as ssh says). Only a regular file is checked: `/dev/null` (a common
 * `UserKnownHostsFile`) and a missing file are read as they are.
 * `uid`: the user they must belong to (or root), when not this process's.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the file, its owner and mode, and the fix.
 */
export function checkSshFile(file: string, role: string, uid?: number): void {
  let regular = false;
  try {
    regular = statSync(file).isFile();
  } catch {
    return; // missing or unreadable: the read that follows says so
  }
  if (regular)
    checkTrustedPath(file, { role, allowRootOwner: true, ...(uid === undefined ? {} : { uid }) });
}
