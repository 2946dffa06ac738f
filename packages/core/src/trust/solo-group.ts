/**
 * Whether a group is the user's alone, so that a directory writable by it (made under umask 002,
 * as is usual where every user has a group of their own) is written by nobody else: the rule
 * Debian's OpenSSH applies to `~/.ssh` and its parents, so what sshd accepts, yonder accepts.
 */

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** `getent` by its full path (never a `PATH` lookup), as it asks NSS: LDAP and sssd too. */
const GETENT = ['/usr/bin/getent', '/bin/getent'].find((path) => existsSync(path));
/** What a whole user or group database may print (spawnSync's default, 1 MiB, is 15k users). */
const MAX_DATABASE_BYTES = 256 * 1024 * 1024;

function getent(database: 'group' | 'passwd', key?: string): string[] | null {
  if (GETENT) {
    const args = key === undefined ? [database] : [database, key];
    const result = spawnSync(GETENT, args, {
      encoding: 'utf8',
      timeout: 10_000,
      maxBuffer: MAX_DATABASE_BYTES,
    });
    // 2: the key is not there; anything else but 0: getent could not answer.
    if (result.status === 0) return result.stdout.split('\n').filter((line) => line !== '');
    if (result.status === 2) return [];
    return null;
  }
  try {
    const lines = readFileSync(`/etc/${database}`, 'utf8').split('\n');
    return key === undefined ? lines : lines.filter((line) => line.split(':')[2] === key);
  } catch {
    return null;
  }
}

const answers = new Map<string, boolean>();

/**
 * True when the user `uid` is the one and only member of group `gid`: every account whose
 * primary group it is is theirs, its member list is empty or names only them, and they are in it
 * one way or the other (a group with no members at all is left to setgid programs, so it counts
 * as others). False whenever the answer is not known (no such group, no user database).
 * Accounts a directory service does not list (sssd without enumeration) are not seen, as they
 * are not by sshd's own check. Asked once per group and user in a process.
 */
export function isSoloGroup(gid: number, uid: number): boolean {
  const key = `${gid}:${uid}`;
  const known = answers.get(key);
  if (known !== undefined) return known;
  // `getent group GID` answers with the first group of that gid only; every entry of it gives
  // its members the gid (a second one made by `groupadd -o`), so all that are listed count too.
  // Each asked only when the one before answered (a directory service that hangs costs once).
  const asked = getent('group', String(gid));
  const listed = asked === null ? null : getent('group');
  const groups = asked === null || listed === null ? null : [...asked, ...listed];
  const answer = groups !== null && soloGroupIn(groups, getent('passwd'), gid, uid);
  answers.set(key, answer);
  return answer;
}

/**
 * The rule itself, on group lines (`getent group GID` and `getent group`: every entry of the
 * gid counts) and `getent passwd` lines (null: not known): see isSoloGroup.
 */
export function soloGroupIn(
  groupLines: readonly string[] | null,
  passwdLines: readonly string[] | null,
  gid: number,
  uid: number,
): boolean {
  const ofGid = (field: string | undefined) => /^\d+$/.test(field ?? '') && Number(field) === gid;
  const groups = groupLines?.filter((line) => ofGid(line.split(':')[2])) ?? [];
  if (groups.length === 0 || passwdLines === null) return false;
  const members = groups.flatMap((group) =>
    (group.split(':')[3] ?? '').split(',').filter((name) => name !== ''),
  );
  const accounts = passwdLines.flatMap((line) => {
    const [name, , id, primary] = line.split(':');
    if (!name || !/^\d+$/.test(id ?? '') || !/^\d+$/.test(primary ?? '')) return [];
    return [{ name, uid: Number(id), gid: Number(primary) }];
  });
  const me = accounts.find((account) => account.uid === uid);
  if (!me) return false;
  const primary = accounts.filter((account) => account.gid === gid);
  if (primary.some((account) => account.uid !== uid)) return false;
  if (members.some((name) => name !== me.name)) return false;
  return primary.length > 0 || members.length > 0;
}
