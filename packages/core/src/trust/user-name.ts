/** Names for uids in messages: "mallory (uid 1002)", read from /etc/passwd, else the bare uid. */
import { readFileSync } from 'node:fs';

let names: Map<number, string> | undefined;

function passwd(): Map<number, string> {
  if (names) return names;
  names = new Map();
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , uid] = line.split(':');
      if (name && uid && /^\d+$/.test(uid) && !names.has(Number(uid))) names.set(Number(uid), name);
    }
  } catch {
    /* no passwd file: uids only */
  }
  return names;
}

/** A uid as people read it: its user name and number, or the number alone. */
export function describeUser(uid: number): string {
  const name = passwd().get(uid);
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

/** Permission bits as `chmod` writes them: 0700, 0777, 01777. */
export function describeMode(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}
