/** The StrictModes-like trust check, on real directories, modes and links. */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UntrustedPathError } from '../errors/untrusted-path-error.js';
import {
  checkPrivateEntry,
  checkTrustedPath,
  ensureTrustedDirectory,
  trustedRealPath,
} from './check-trusted-path.js';

let base: string;
const me = process.getuid?.() ?? 0;
/** A group other users are in: a group of the user's alone is the user's (isSoloGroup). */
const SHARED_GID = me === 2002 ? 2003 : 2002;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'yonder-trust-'));
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

function refusal(action: () => unknown): UntrustedPathError {
  try {
    action();
  } catch (error) {
    expect(UntrustedPathError.isInstance(error), String(error)).toBe(true);
    return error as UntrustedPathError;
  }
  throw new Error('expected an UntrustedPathError');
}

describe('checkTrustedPath', () => {
  it('accepts a private directory under a sticky, world-writable /tmp', () => {
    expect(statSync(tmpdir()).mode & 0o1000).toBe(0o1000);
    expect(checkTrustedPath(base, { type: 'directory' })).toBe(true);
  });

  it('refuses a directory others can write, naming it, its owner and mode, and the fix', () => {
    const state = join(base, 'state');
    mkdirSync(state);
    chownSync(state, me, SHARED_GID);
    chmodSync(state, 0o777);
    const error = refusal(() => checkTrustedPath(state, { role: 'the state directory' }));
    expect(error.code).toBe('E_UNTRUSTED_PATH');
    expect(error.path).toBe(state);
    expect(error.mode).toBe(0o777);
    expect(error.message).toContain(`Refusing the state directory ${state}`);
    expect(error.message).toContain('mode 0777');
    expect(error.message).toContain('writable by its group and others');
    expect(error.message).toContain(`Fix: chmod go-w ${state}`);
    expect(error.message).toMatch(/owner \S+ \(uid \d+\)|owner uid \d+/);
  });

  it('refuses a path below a parent others can write without the sticky bit', () => {
    const shared = join(base, 'shared');
    mkdirSync(join(shared, 'state'), { recursive: true });
    chownSync(shared, me, SHARED_GID);
    chmodSync(shared, 0o775);
    const error = refusal(() => checkTrustedPath(join(shared, 'state')));
    expect(error.path).toBe(shared);
    expect(error.message).toContain('writable by its group');
    expect(error.message).toContain(`chmod go-w ${shared}`);
    chmodSync(shared, 0o1777);
    expect(checkTrustedPath(join(shared, 'state'))).toBe(true);
  });

  it('accepts directories its group can write when the group is the user’s alone (umask 002), as Debian’s sshd does', () => {
    // Root's group 0: root's primary group, no member list, nobody else's (Debian's default).
    const groupLine = execFileSync('getent', ['group', '0'], { encoding: 'utf8' }).trim();
    const primaryOfGroup0 = execFileSync('getent', ['passwd'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.split(':')[3] === '0');
    expect(me, 'this test runs as root, whose group is its own').toBe(0);
    expect(groupLine).toMatch(/^root:[^:]*:0:$/);
    expect(primaryOfGroup0.map((line) => line.split(':')[2])).toEqual(['0']);
    const project = join(base, 'project');
    mkdirSync(join(project, 'runs'), { recursive: true });
    chownSync(project, me, 0);
    chmodSync(project, 0o775);
    chownSync(join(project, 'runs'), me, 0);
    chmodSync(join(project, 'runs'), 0o770);
    expect(checkTrustedPath(join(project, 'runs'), { type: 'directory' })).toBe(true);
    // Others may still not write, and a group others are in still counts as others.
    chmodSync(project, 0o777);
    expect(refusal(() => checkTrustedPath(join(project, 'runs'))).message).toContain(
      `${project} (owner root (uid 0), mode 0777) is writable by others,`,
    );
    chmodSync(project, 0o775);
    chownSync(join(project, 'runs'), me, SHARED_GID);
    expect(refusal(() => checkTrustedPath(join(project, 'runs'))).message).toContain(
      'mode 0770) is writable by its group,',
    );
  });

  it('refuses group-write that is an access control list’s mask: a user it names may write, though the group is the user’s alone', () => {
    expect(me, 'this test runs as root, whose group 0 is its own').toBe(0);
    const project = join(base, 'acl');
    mkdirSync(join(project, 'runs'), { recursive: true });
    chownSync(project, me, 0);
    chmodSync(project, 0o755);
    // Another user may write it: the mode reads 0775, its group bits now the ACL's mask.
    execFileSync('setfacl', ['-m', `u:${SHARED_GID}:rwx`, project]);
    expect(statSync(project).mode & 0o7777).toBe(0o775);
    const error = refusal(() => checkTrustedPath(join(project, 'runs')));
    expect(error.path).toBe(project);
    expect(error.message).toContain(
      `${project} (owner root (uid 0), mode 0775) is writable by the users and groups its access control list names,`,
    );
    expect(error.message).toContain(`Fix: chmod go-w ${project}`);
    expect(refusal(() => checkTrustedPath(project)).message).toContain(
      `Fix: chmod go-w ${project}`,
    );
    // The fix works: chmod g-w takes write from the mask, so from everyone the ACL names.
    execFileSync('chmod', ['g-w', project]);
    expect(checkTrustedPath(join(project, 'runs'))).toBe(true);
  });

  it('refuses the path itself when it is sticky but world-writable (only parents may be)', () => {
    chmodSync(base, 0o1777);
    expect(refusal(() => checkTrustedPath(base)).path).toBe(base);
  });

  it('refuses a path that belongs to another user; parents of root are fine', () => {
    const other = me === 4242 ? 4243 : 4242;
    const error = refusal(() => checkTrustedPath(base, { uid: other }));
    expect(error.path).toBe(base);
    expect(error.message).toContain('belongs to another user');
    expect(error.message).toContain('uid 4242');
    // The same directory as a parent of root's is refused too unless it is root's.
    mkdirSync(join(base, 'x'));
    const parent = refusal(() => checkTrustedPath(join(base, 'x'), { uid: other }));
    expect(parent.path).toBe(me === 0 ? join(base, 'x') : base);
  });

  it('follows a link of the user’s to a trusted place, and checks where it leads', () => {
    const real = join(base, 'real');
    mkdirSync(real);
    symlinkSync(real, join(base, 'link'));
    expect(checkTrustedPath(join(base, 'link'), { type: 'directory' })).toBe(true);
    chmodSync(real, 0o777);
    expect(refusal(() => checkTrustedPath(join(base, 'link'))).path).toBe(real);
  });

  it('refuses a link made by another user on the way', () => {
    mkdirSync(join(base, 'real'));
    symlinkSync(join(base, 'real'), join(base, 'link'));
    if (me === 0) {
      // root can give the link away: every real directory stays root's, only the link is not.
      lchownSync(join(base, 'link'), 4242, 4242);
      const error = refusal(() => checkTrustedPath(join(base, 'link', 'x')));
      expect(error.path).toBe(join(base, 'link'));
      expect(error.message).toContain('symbolic link made by another user');
      expect(error.message).toContain(`rm ${join(base, 'link')}`);
    } else {
      // Not root: the link and its directory are ours, so for another user both are refused.
      expect(refusal(() => checkTrustedPath(join(base, 'link', 'x'), { uid: 4242 })).path).toBe(
        base,
      );
    }
  });

  it('says false for a missing path whose existing parents pass, and refuses one below a bad parent', () => {
    expect(checkTrustedPath(join(base, 'a', 'b'))).toBe(false);
    chmodSync(base, 0o777);
    expect(refusal(() => checkTrustedPath(join(base, 'a', 'b'))).path).toBe(base);
  });

  it('with absentMustStayAbsent, refuses a missing path another user could create, even in a sticky directory', () => {
    const shared = join(base, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const options = { absentMustStayAbsent: true, role: 'a test directory' };
    // Only the first missing name matters: it is made in the deepest directory there is.
    const refused = refusal(() => checkTrustedPath(join(shared, 'node_modules', 'x'), options));
    expect(refused.path).toBe(shared);
    expect(refused.message).toContain(`who could create ${join(shared, 'node_modules')}`);
    expect(refused.message).toContain(`Fix: use a location below directories that only you`);
    // Without the option, or where it exists and is the user's, the sticky parent is fine.
    expect(checkTrustedPath(join(shared, 'node_modules'))).toBe(false);
    mkdirSync(join(shared, 'node_modules'), { mode: 0o755 });
    expect(checkTrustedPath(join(shared, 'node_modules'), options)).toBe(true);
    // In a directory no one else can write, an absent path stays absent.
    expect(checkTrustedPath(join(base, 'node_modules'), options)).toBe(false);
  });

  it('trustedRealPath gives where a trusted path really is; a verified set skips the parents it has seen, and only those', () => {
    mkdirSync(join(base, 'real'), { mode: 0o700 });
    symlinkSync(join(base, 'real'), join(base, 'link'));
    expect(trustedRealPath(join(base, 'link'))).toBe(join(base, 'real'));
    expect(trustedRealPath(join(base, 'absent'))).toBeUndefined();
    const verified = new Set<string>();
    expect(checkTrustedPath(join(base, 'real', 'x'), { verified })).toBe(false);
    expect(verified.has(join(base, 'real'))).toBe(true);
    // A directory opened to others after it was verified passes only for checks sharing the set.
    chmodSync(join(base, 'real'), 0o777);
    expect(checkTrustedPath(join(base, 'real', 'x'), { verified })).toBe(false);
    expect(refusal(() => checkTrustedPath(join(base, 'real', 'x'))).path).toBe(join(base, 'real'));
  });

  it('checks the type of the path itself', () => {
    writeFileSync(join(base, 'file'), 'x', { mode: 0o600 });
    expect(
      refusal(() => checkTrustedPath(join(base, 'file'), { type: 'directory' })).message,
    ).toContain('is not a directory');
    expect(checkTrustedPath(join(base, 'file'), { type: 'file' })).toBe(true);
  });
});

describe('ensureTrustedDirectory', () => {
  it('makes every missing directory 0700, one at a time', () => {
    const deep = join(base, 'one', 'two', 'three');
    expect(ensureTrustedDirectory(deep)).toBe(deep);
    for (const dir of [join(base, 'one'), join(base, 'one', 'two'), deep])
      expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('makes nothing below a parent others can write', () => {
    chmodSync(base, 0o777);
    refusal(() => ensureTrustedDirectory(join(base, 'state')));
    expect(() => statSync(join(base, 'state'))).toThrow();
  });
});

describe('checkPrivateEntry', () => {
  it('refuses a link in place of one of yonder’s own files, and a file others can write', () => {
    writeFileSync(join(base, 'target'), 'x', { mode: 0o600 });
    symlinkSync(join(base, 'target'), join(base, 'index.log'));
    expect(refusal(() => checkPrivateEntry(join(base, 'index.log'))).message).toContain(
      'symbolic link',
    );
    writeFileSync(join(base, 'open'), 'x', { mode: 0o666 });
    chmodSync(join(base, 'open'), 0o666);
    expect(refusal(() => checkPrivateEntry(join(base, 'open'))).message).toContain('chmod go-w');
    expect(checkPrivateEntry(join(base, 'missing'))).toBe(false);
  });
});
