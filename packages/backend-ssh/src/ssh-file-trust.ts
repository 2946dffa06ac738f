/** The files ssh reads (configs, known_hosts) trusted as OpenSSH trusts them: only a file no other user could change, or replace, or feed, is read. */
import { statSync } from 'node:fs';
import { YonderError } from '@yonder/core';
import { checkTrustedPath } from '@yonder/core/backend-kit';

/**
 * Refuse `file` when another user could change it or a directory above it ("Bad owner or
 * permissions", as ssh says), when it is missing where another user could make it before ssh
 * reads it, or when it is a FIFO, a socket or a device (what another user writes into it would
 * be read as the file: a FIFO fed a ProxyCommand). `/dev/null`, a common
 * `UserKnownHostsFile`, is read as nothing; a directory fails when it is read, as ssh fails.
 * `uid`: the user they must belong to (or root), when not this process's.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the file, its owner and mode, and the fix.
 */
export function checkSshFile(file: string, role: string, uid?: number): void {
  if (file === '/dev/null') return;
  const exists = checkTrustedPath(file, {
    role,
    allowRootOwner: true,
    absentMustStayAbsent: true,
    ...(uid === undefined ? {} : { uid }),
  });
  if (!exists) return;
  const info = statSync(file, { throwIfNoEntry: false });
  if (info && !info.isFile() && !info.isDirectory())
    throw new YonderError(
      'E_UNTRUSTED_PATH',
      `Refusing ${role} ${file}: it is not a regular file (a FIFO, a socket or a device), and what is written into it would be read as ${role}. Fix: name a regular file of yours.`,
      { data: { path: file } },
    );
}
