/** The one trust check of yonder, like OpenSSH's StrictModes: only what is the user's own is used. */
import { lstatSync, mkdirSync, readlinkSync, type Stats } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { UntrustedPathError } from '../errors/untrusted-path-error.js';
import { YonderError } from '../errors/yonder-error.js';
import { hasExtendedAcl } from './extended-acl.js';
import { isSoloGroup } from './solo-group.js';
import { describeMode, describeUser } from './user-name.js';

/** How many symbolic links one path may pass through, as Linux allows (ELOOP past it). */
const MAX_LINKS = 40;
const GROUP_WRITE = 0o020;
const OTHER_WRITE = 0o002;
const STICKY = 0o1000;

export interface TrustOptions {
  /** What the path is, for messages: "the state directory", "the config file"… */
  role?: string;
  /** The user it must belong to; default: this process's user. */
  uid?: number;
  /** What the path itself must be, when it exists. */
  type?: 'directory' | 'file';
  /** Whether the path itself may be root's as well as the user's (code installed by root). */
  allowRootOwner?: boolean;
  /**
   * When the path does not exist, whether no one else may be able to create it either: the
   * directory it would be made in must then be writable by nobody else, sticky or not. For
   * names a program would use once they appear, as Node's module lookup uses `node_modules`.
   */
  absentMustStayAbsent?: boolean;
  /**
   * Directories already found trusted as parents by checks sharing this set, not looked at
   * again: for many checks in one go (a plugin's dependencies). No one else can change a
   * trusted directory, but its owner can: keep a set only as long as one task.
   */
  verified?: Set<string>;
}

type Inspection =
  | { exists: true; realPath: string }
  | { exists: false; parent: string; missing: string[] };

/** This process's uid; null where there are none (then nothing is checked). */
function currentUid(): number | null {
  return typeof process.getuid === 'function' ? process.getuid() : null;
}

function components(path: string): string[] {
  return path.split('/').filter((part) => part !== '' && part !== '.');
}

class Checker {
  constructor(
    private readonly subject: string,
    private readonly uid: number,
    private readonly options: TrustOptions,
  ) {}

  /**
   * Who besides the user (and root) can write to it, or null for no one: others, or a group
   * that is not the user's alone (a group of their own, under umask 002, is theirs: see
   * isSoloGroup), or, with an access control list, whoever it names (the group bits are then
   * its mask).
   */
  private writers(path: string, info: Stats): string | null {
    const other = (info.mode & OTHER_WRITE) !== 0;
    let group: string | null = null;
    if ((info.mode & GROUP_WRITE) !== 0) {
      if (!isSoloGroup(info.gid, this.uid)) group = 'its group';
      else if (hasExtendedAcl(path)) group = 'the users and groups its access control list names';
    }
    if (group === null) return other ? 'others' : null;
    return other ? `${group} and others` : group;
  }

  private refuse(path: string, info: Stats, problem: string, fix: string): never {
    const role = this.options.role ?? 'the path';
    throw new UntrustedPathError({
      subject: this.subject,
      path,
      owner: info.uid,
      mode: info.mode & 0o7777,
      message:
        `Refusing ${role} ${this.subject}: ${path} (owner ${describeUser(info.uid)}, mode ` +
        `${describeMode(info.mode)}) ${problem}, so another user could change what yonder reads or runs there. Fix: ${fix}`,
    });
  }

  /** A directory on the way: the user's or root's, written by nobody else unless sticky (/tmp). */
  parent(path: string, info: Stats): void {
    if (info.uid !== this.uid && info.uid !== 0) {
      this.refuse(
        path,
        info,
        `belongs to another user, neither to you (${describeUser(this.uid)}) nor to root`,
        'use a location where every directory on the way is yours or root’s.',
      );
    }
    // A directory all may share (as /tmp): whoever writes it, no need to ask who.
    if ((info.mode & STICKY) !== 0) return;
    const writers = this.writers(path, info);
    if (writers !== null) {
      this.refuse(
        path,
        info,
        `is writable by ${writers}`,
        `chmod go-w ${path} (or, for a directory all may share, chmod +t ${path} as /tmp has).`,
      );
    }
  }

  /** Where an absent path would be made: writable by nobody else, not even with the sticky bit. */
  creatableIn(path: string, info: Stats, missing: string): void {
    const writers = this.writers(path, info);
    if (writers === null) return;
    this.refuse(
      path,
      info,
      `is writable by ${writers}, who could create ${join(path, missing)} (it does not exist yet)`,
      `use a location below directories that only you or root can write (not below ${path}).`,
    );
  }

  /** A symbolic link on the way: only one of the user's or root's is followed. */
  link(path: string, info: Stats): void {
    if (info.uid !== this.uid && info.uid !== 0) {
      this.refuse(
        path,
        info,
        'is a symbolic link made by another user',
        `remove it (rm ${path}) and use a path of your own.`,
      );
    }
  }

  /** The path itself: the user's, written by nobody else, of the type wanted. */
  self(path: string, info: Stats): void {
    const rootOk = this.options.allowRootOwner === true && info.uid === 0;
    if (info.uid !== this.uid && !rootOk) {
      this.refuse(
        path,
        info,
        `belongs to another user, not to you (${describeUser(this.uid)})`,
        `do not use what is in it; move it aside (mv ${path} ${path}.untrusted) and let yonder make its own, or choose another path.`,
      );
    }
    const writers = this.writers(path, info);
    if (writers !== null)
      this.refuse(path, info, `is writable by ${writers}`, `chmod go-w ${path}`);
    const type = this.options.type;
    if (type === 'directory' && !info.isDirectory())
      this.refuse(path, info, 'is not a directory', `move it aside (mv ${path} ${path}.old).`);
    if (type === 'file' && !info.isFile())
      this.refuse(path, info, 'is not a regular file', `move it aside (mv ${path} ${path}.old).`);
  }
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Walk `path` from `/` as the kernel would, following links, checking every directory passed
 * as a parent, every link as a link, and the final component as the path itself.
 */
function inspect(path: string, options: TrustOptions): Inspection {
  const subject = resolve(path);
  const uid = options.uid ?? currentUid();
  if (uid === null) return { exists: true, realPath: subject };
  const check = new Checker(subject, uid, options);
  // Not `subject`'s components: resolve() takes `..` at its letters, where the kernel goes to
  // the parent of where a link before it leads.
  let pending = components(isAbsolute(path) ? path : `${process.cwd()}/${path}`);
  let current = '/';
  let links = 0;
  check.parent('/', lstatSync('/'));
  while (pending.length > 0) {
    const name = pending.shift() as string;
    if (name === '..') {
      current = dirname(current);
      continue;
    }
    const candidate = join(current, name);
    if (pending.length > 0 && options.verified?.has(candidate)) {
      current = candidate;
      continue;
    }
    const info = lstatOrNull(candidate);
    if (info === null) {
      if (options.absentMustStayAbsent === true)
        check.creatableIn(current, lstatSync(current), name);
      return { exists: false, parent: current, missing: [name, ...pending] };
    }
    if (info.isSymbolicLink()) {
      check.link(candidate, info);
      links += 1;
      if (links > MAX_LINKS) {
        throw new YonderError('E_UNSAFE_VALUE', `Too many symbolic links in ${subject}.`);
      }
      const target = readlinkSync(candidate);
      pending = [...components(target), ...pending];
      if (isAbsolute(target)) current = '/';
      continue;
    }
    if (pending.length > 0) {
      if (!info.isDirectory()) {
        // As the file system would say it, so that callers report it as they report mkdir's.
        throw Object.assign(new Error(`ENOTDIR: not a directory, ${candidate} (in ${subject})`), {
          code: 'ENOTDIR',
        });
      }
      check.parent(candidate, info);
      options.verified?.add(candidate);
    }
    current = candidate;
  }
  check.self(current, current === '/' ? lstatSync('/') : lstatSync(current));
  return { exists: true, realPath: current };
}

/**
 * Check that `path` can be trusted: it and every directory above it up to `/` belong to the
 * user (or, above it, to root), no one else can write to any of them (a directory above with
 * the sticky bit, as /tmp, aside), and every symbolic link on the way is the user's or root's.
 * Returns false when the path does not exist (what exists above it having passed).
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the path, its owner and mode, and the fix.
 */
export function checkTrustedPath(path: string, options: TrustOptions = {}): boolean {
  return inspect(path, options).exists;
}

/**
 * As checkTrustedPath, returning where `path` really is (every link on the way followed), or
 * undefined when it does not exist.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the path, its owner and mode, and the fix.
 */
export function trustedRealPath(path: string, options: TrustOptions = {}): string | undefined {
  const found = inspect(path, options);
  return found.exists ? found.realPath : undefined;
}

/**
 * Make sure `path` is a trusted directory, creating what is missing of it with mode 0700
 * (one directory at a time, each checked before the next is made in it).
 * Returns the directory's real path.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH`; the file system's error when it cannot be made.
 */
export function ensureTrustedDirectory(path: string, options: TrustOptions = {}): string {
  const wanted = { ...options, type: 'directory' as const };
  for (let attempt = 0; attempt < 256; attempt += 1) {
    const found = inspect(path, wanted);
    if (found.exists) return found.realPath;
    const [next] = found.missing;
    try {
      // Not recursive: Node's recursive mkdir reports a read-only file system as ENOENT.
      mkdirSync(join(found.parent, next as string), { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  throw new YonderError('E_UNSAFE_VALUE', `Could not make the directory ${resolve(path)}.`);
}

/**
 * Check one entry inside a directory already checked: not a link, the user's, written by nobody
 * else, of the type wanted. Cheaper than the whole walk, for the many files of the ledger.
 * Returns false when it does not exist.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH`.
 */
export function checkPrivateEntry(path: string, options: TrustOptions = {}): boolean {
  const uid = options.uid ?? currentUid();
  const info = lstatOrNull(path);
  if (info === null) return false;
  if (uid === null) return true;
  const check = new Checker(path, uid, options);
  if (info.isSymbolicLink()) {
    throw new UntrustedPathError({
      subject: path,
      path,
      owner: info.uid,
      mode: info.mode & 0o7777,
      message: `Refusing ${options.role ?? 'the path'} ${path}: it is a symbolic link where yonder keeps its own ${options.type ?? 'file'} (owner ${describeUser(info.uid)}), and yonder never follows a link it did not make. Fix: remove it (rm ${path}).`,
    });
  }
  check.self(path, info);
  return true;
}
