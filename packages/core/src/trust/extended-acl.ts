/** Whether a file has a POSIX access control list beyond its mode bits, as GNU `ls -ld` marks it (`+`). */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** `ls` by its full path (never a `PATH` lookup). */
const LS = ['/usr/bin/ls', '/bin/ls'].find((path) => existsSync(path));

/**
 * True when `path` (not followed if a link) has an extended access control list: its group
 * bits are then the ACL's mask, the most that any user or group the ACL names may do, and not
 * what its group may, so group-write there is not the owning group's alone (`setfacl -m
 * u:someone:rwx` shows as `g+w`). True also when it cannot be told (no `ls`, or it failed), so
 * that such a path is not taken for the user's own.
 */
export function hasExtendedAcl(path: string): boolean {
  if (!LS) return true;
  const result = spawnSync(LS, ['-ld', '--', path], {
    encoding: 'utf8',
    env: { LC_ALL: 'C' },
    timeout: 10_000,
  });
  if (result.status !== 0) return true;
  // ' ': mode bits only; '.': an SELinux context only; '+' (or anything else): an ACL.
  const mark = result.stdout.charAt(10);
  return mark !== ' ' && mark !== '.';
}
