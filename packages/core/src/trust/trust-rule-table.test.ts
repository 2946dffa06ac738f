/**
 * The one trust rule has two implementations: core's `checkTrustedPath` (TypeScript, for what
 * yonder reads and runs where it runs) and the sh twin `trusted_path` (remote/
 * job-directory-functions.ts, for what it makes, reads and runs on a target). One table of cases
 * runs through both, as the victim test user, on real files, links, owners and access control
 * lists, and each case must get the same verdict, naming the same path when refused.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  mkdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  cleanupUsers,
  labGroup,
  ownedDir,
  requireUsers,
  type TestUser,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UntrustedPathError } from '../errors/untrusted-path-error.js';
import { TRUSTED_DIRECTORY_FUNCTIONS } from '../remote/job-directory-functions.js';
import { checkTrustedPath } from './check-trusted-path.js';

let victim: TestUser;
let attacker: TestUser;
let base: string;

beforeAll(() => {
  ({ victim, attacker } = requireUsers());
  base = ownedDir(victim, 'trust-table');
});
afterAll(() => cleanupUsers());

type Verdict = 'ok' | 'absent' | 'refused';
type Type = 'directory' | 'file' | 'any';
type Owners = 'user' | 'user-or-root';

interface Case {
  /** What the case is. */
  readonly name: string;
  /** Makes the files (as root, chowning) in `dir`, a fresh directory of the victim's; the path to judge. */
  readonly make: (dir: string) => string;
  readonly type: Type;
  readonly owners?: Owners;
  readonly verdict: Verdict;
  /** For a refusal: the path the refusal must name, relative to `dir` ('' the subject itself). */
  readonly names?: string;
}

function mine(path: string, mode = 0o700): string {
  chownSync(path, victim.uid, victim.gid);
  chmodSync(path, mode);
  return path;
}
function theirs(path: string, mode = 0o755): string {
  chownSync(path, attacker.uid, attacker.gid);
  chmodSync(path, mode);
  return path;
}
function directory(path: string, owner: (path: string, mode?: number) => string, mode?: number) {
  mkdirSync(path);
  return owner(path, mode);
}
function file(path: string, owner: (path: string, mode?: number) => string, mode = 0o755) {
  writeFileSync(path, '#!/bin/sh\n');
  return owner(path, mode);
}
function link(path: string, target: string, uid: number, gid: number): string {
  symlinkSync(target, path);
  lchownSync(path, uid, gid);
  return path;
}
const victimLink = (path: string, target: string) => link(path, target, victim.uid, victim.gid);

type Owner = (path: string, mode?: number) => string;

/** `d/ln/../x`, `ln` a link to `d/deep/a/b`: `deep/a/x` made by `atTarget`, `d/x` by `atLetters`. */
function dotDotAfterLink(d: string, atTarget: Owner, atLetters: Owner): string {
  const a = directory(join(directory(join(d, 'deep'), mine), 'a'), mine);
  directory(join(a, 'b'), mine);
  file(join(a, 'x'), atTarget);
  file(join(d, 'x'), atLetters);
  victimLink(join(d, 'ln'), join(a, 'b'));
  return `${d}/ln/../x`;
}

/** A directory of the user's whose access control list gives another user `permissions`. */
function withAcl(d: string, permissions: string): string {
  const path = directory(join(d, 'acl'), mine, 0o755);
  execFileSync('setfacl', ['-m', `u:${attacker.uid}:${permissions}`, path]);
  return path;
}

const CASES: Case[] = [
  {
    name: 'a directory of the user’s',
    make: (d) => directory(join(d, 'own'), mine),
    type: 'directory',
    verdict: 'ok',
  },
  {
    name: 'a program of the user’s',
    make: (d) => file(join(d, 'tool'), mine),
    type: 'file',
    verdict: 'ok',
  },
  {
    name: 'a missing name',
    make: (d) => join(d, 'nothing', 'here'),
    type: 'any',
    verdict: 'absent',
  },
  {
    name: 'a file where a directory is wanted',
    make: (d) => file(join(d, 'tool'), mine),
    type: 'directory',
    verdict: 'refused',
    names: '',
  },
  {
    name: 'a directory where a regular file is wanted',
    make: (d) => directory(join(d, 'own'), mine),
    type: 'file',
    verdict: 'refused',
    names: '',
  },
  {
    name: 'a directory group-writable by a group others are in',
    make: (d) => {
      const path = directory(join(d, 'team'), mine, 0o2775);
      chownSync(path, victim.uid, labGroup());
      chmodSync(path, 0o2775);
      return path;
    },
    type: 'directory',
    verdict: 'refused',
    names: '',
  },
  {
    name: 'a directory group-writable by the user’s own group (umask 002)',
    make: (d) => directory(join(d, 'solo'), mine, 0o775),
    type: 'directory',
    verdict: 'ok',
  },
  {
    name: 'a program in a directory group-writable by others',
    make: (d) => {
      const team = directory(join(d, 'team'), mine);
      chownSync(team, victim.uid, labGroup());
      chmodSync(team, 0o775);
      return file(join(team, 'qstat'), mine);
    },
    type: 'file',
    owners: 'user-or-root',
    verdict: 'refused',
    names: 'team',
  },
  {
    name: 'a world-writable directory',
    make: (d) => directory(join(d, 'open'), mine, 0o777),
    type: 'directory',
    verdict: 'refused',
    names: '',
  },
  {
    name: 'a file of the user’s in a sticky world-writable directory (as /tmp)',
    make: (d) => file(join(directory(join(d, 'sticky'), mine, 0o1777), 'tool'), mine),
    type: 'file',
    verdict: 'ok',
  },
  {
    name: 'a program root installed, root allowed',
    make: (d) => {
      const path = file(join(d, 'sbatch'), mine);
      chownSync(path, 0, 0);
      return path;
    },
    type: 'file',
    owners: 'user-or-root',
    verdict: 'ok',
  },
  {
    name: 'a file of root’s where only the user’s will do',
    make: (d) => {
      const path = file(join(d, 'config'), mine, 0o644);
      chownSync(path, 0, 0);
      return path;
    },
    type: 'file',
    verdict: 'refused',
    names: '',
  },
  {
    name: 'a program of another user’s, root allowed',
    make: (d) => file(join(d, 'sbatch'), theirs),
    type: 'file',
    owners: 'user-or-root',
    verdict: 'refused',
    names: '',
  },
  {
    name: 'a directory of another user’s on the way',
    make: (d) => file(join(directory(join(d, 'their'), theirs), 'sbatch'), theirs),
    type: 'file',
    owners: 'user-or-root',
    verdict: 'refused',
    names: 'their',
  },
  {
    name: 'a directory of root’s on the way',
    make: (d) => {
      const dir = directory(join(d, 'opt'), mine, 0o755);
      chownSync(dir, 0, 0);
      return file(join(dir, 'sbatch'), mine);
    },
    type: 'file',
    verdict: 'ok',
  },
  {
    name: 'a link of the user’s to a directory of theirs',
    make: (d) => victimLink(join(d, 'via'), directory(join(d, 'own'), mine)),
    type: 'directory',
    verdict: 'ok',
  },
  {
    name: 'a link another user made',
    make: (d) => link(join(d, 'via'), directory(join(d, 'own'), mine), attacker.uid, attacker.gid),
    type: 'directory',
    verdict: 'refused',
    names: 'via',
  },
  {
    name: 'a link of the user’s leading to another user’s directory',
    make: (d) => victimLink(join(d, 'results'), directory(join(d, 'their'), theirs)),
    type: 'directory',
    verdict: 'refused',
    names: 'their',
  },
  {
    name: 'a relative link climbing out (../) to another user’s program',
    make: (d) => {
      file(join(d, 'qstat'), theirs);
      return victimLink(join(directory(join(d, 'bin'), mine), 'qstat'), '../qstat');
    },
    type: 'file',
    owners: 'user-or-root',
    verdict: 'refused',
    names: 'qstat',
  },
  {
    // The kernel takes `..` from where the link leads (deep/a), not from where it is (d):
    // deep/a/x is the attacker's, d/x (what the letters spell) the user's.
    name: '`..` after a link goes to the parent of the link’s target',
    make: (d) => dotDotAfterLink(d, theirs, mine),
    type: 'file',
    verdict: 'refused',
    names: 'deep/a/x',
  },
  {
    name: '`..` after a link, the other way round: the letters spell another user’s file',
    make: (d) => dotDotAfterLink(d, mine, theirs),
    type: 'file',
    verdict: 'ok',
  },
  {
    // `$(readlink …)` would drop the newline and judge `good`, the user's.
    name: 'a link whose target ends in a newline',
    make: (d) => {
      directory(join(d, 'good'), mine);
      directory(join(d, 'good\n'), theirs);
      return victimLink(join(d, 'nl'), 'good\n');
    },
    type: 'directory',
    verdict: 'refused',
    names: 'good\n',
  },
  {
    name: 'a name with a newline in it, the user’s',
    make: (d) => directory(join(d, 'a\nb'), mine),
    type: 'directory',
    verdict: 'ok',
  },
  {
    name: 'a name with a newline in it, another user’s',
    make: (d) => file(join(directory(join(d, 'x\ny'), theirs), 'tool'), theirs),
    type: 'file',
    owners: 'user-or-root',
    verdict: 'refused',
    names: 'x\ny',
  },
  {
    name: 'a name with $(…) and quotes in it, run by nobody',
    make: (d) => directory(join(d, '$(touch pwned) `touch pwned` \'"'), mine),
    type: 'directory',
    verdict: 'ok',
  },
  {
    name: 'a name starting with a dash, another user’s',
    make: (d) => directory(join(d, '-rf'), theirs),
    type: 'directory',
    verdict: 'refused',
    names: '-rf',
  },
  {
    name: 'an access control list that lets another user write',
    make: (d) => withAcl(d, 'rwx'),
    type: 'directory',
    verdict: 'refused',
    names: '',
  },
  {
    name: 'an access control list that lets another user read only',
    make: (d) => withAcl(d, 'rx'),
    type: 'directory',
    verdict: 'ok',
  },
  {
    name: 'a loop of links',
    make: (d) => {
      victimLink(join(d, 'p'), 'q');
      return victimLink(join(d, 'q'), 'p');
    },
    type: 'any',
    verdict: 'refused',
  },
];

function viaTypeScript(path: string, c: Case): { verdict: Verdict; path?: string } {
  try {
    const exists = checkTrustedPath(path, {
      uid: victim.uid,
      role: 'the case',
      ...(c.type === 'any' ? {} : { type: c.type }),
      allowRootOwner: c.owners === 'user-or-root',
    });
    return { verdict: exists ? 'ok' : 'absent' };
  } catch (error) {
    if (UntrustedPathError.isInstance(error)) return { verdict: 'refused', path: error.path };
    if ((error as { code?: string }).code === 'E_UNSAFE_VALUE') return { verdict: 'refused' };
    throw error;
  }
}

function viaSh(path: string, c: Case, cwd: string): { verdict: Verdict; stderr: string } {
  const script = `${TRUSTED_DIRECTORY_FUNCTIONS}
trusted_path "$1" case "$2" "$3" || exit 1
if [ "$td_exists" = 1 ]; then echo ok; else echo absent; fi`;
  const result = spawnSync(
    'runuser',
    ['-u', victim.name, '--', 'sh', '-c', script, 'sh', path, c.type, c.owners ?? 'user'],
    { cwd, encoding: 'utf8', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' } },
  );
  if (result.status === 1) return { verdict: 'refused', stderr: result.stderr };
  expect(result.status, result.stderr).toBe(0);
  return { verdict: result.stdout.trim() as Verdict, stderr: result.stderr };
}

describe('one trust rule, two implementations, one table of cases', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const dir = join(base, String(CASES.indexOf(c)));
    mkdirSync(dir);
    mine(dir);
    const path = c.make(dir);
    const ts = viaTypeScript(path, c);
    const sh = viaSh(path, c, dir);
    expect({ ts: ts.verdict, sh: sh.verdict }).toEqual({ ts: c.verdict, sh: c.verdict });
    if (c.names !== undefined) {
      const named = c.names === '' ? undefined : join(dir, c.names);
      if (named !== undefined) expect(ts.path).toBe(named);
      expect(sh.stderr).toContain(`: ${ts.path} (owner `);
    }
    // No name was ever run as a command.
    expect(existsSync(join(dir, 'pwned'))).toBe(false);
  });
});

describe('trusted_program (a program found as exec would find it, then judged)', () => {
  function run(dir: string, name: string, path: string) {
    const script = `${TRUSTED_DIRECTORY_FUNCTIONS}
trusted_program "$1" 'scheduler command' && printf '%s' "$tp_path"`;
    return spawnSync('runuser', ['-u', victim.name, '--', 'sh', '-c', script, 'sh', name], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: `${path}:/usr/sbin:/usr/bin:/sbin:/bin`, LC_ALL: 'C' },
    });
  }

  it('takes the first executable of the name on PATH and refuses it when another user can change it', () => {
    const dir = join(base, 'programs');
    mkdirSync(dir);
    mine(dir);
    const team = directory(join(dir, 'team'), mine);
    chownSync(team, victim.uid, labGroup());
    chmodSync(team, 0o775);
    file(join(team, 'qstat'), mine);
    const own = directory(join(dir, 'own'), mine);
    file(join(own, 'qstat'), mine);
    // Not executable: exec passes it by, and so does the lookup.
    file(join(own, 'sbatch'), mine, 0o644);
    file(join(team, 'sbatch'), mine);

    const ownFirst = run(dir, 'qstat', `${own}:${team}`);
    expect(ownFirst).toMatchObject({ status: 0, stdout: join(own, 'qstat') });
    const teamFirst = run(dir, 'qstat', `${team}:${own}`);
    expect(teamFirst.status).toBe(1);
    expect(teamFirst.stderr).toContain(
      `Refusing the scheduler command ${join(team, 'qstat')}: ${team} (owner`,
    );
    expect(run(dir, 'sbatch', `${own}:${team}`).stderr).toContain(`${team} (owner`);
    expect(run(dir, 'nothing-such', own)).toMatchObject({ status: 127 });
    expect(run(dir, 'nothing-such', own).stderr).toContain('not an executable file on PATH');
  });
});
