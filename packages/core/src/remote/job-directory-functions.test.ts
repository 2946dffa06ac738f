/** The sh trust check of work directories and the private job-directory functions, run by a real sh on real directories, links and owners. */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  JOB_FILE_FUNCTIONS,
  PRIVATE_DIRECTORY_FUNCTIONS,
  TRUSTED_DIRECTORY_FUNCTIONS,
} from './job-directory-functions.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-job-dir-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const ME = process.getuid?.() ?? 0;
/** Another uid than this process's: the owner of what "another user" left. */
const OTHER = ME === 2002 ? 2003 : 2002;

function user(uid: number): string {
  const name = spawnSync('id', ['-nu', String(uid)], { encoding: 'utf8' }).stdout.trim();
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

/**
 * Run the functions, then `body`, with `args` as $1…; stdout, stderr and the exit status. With
 * `groupLines`, those lines are added to /etc/group for this run only (a mount namespace of its
 * own, as a careless admin's `groupadd -o` would leave it).
 */
function sh(
  body: string,
  args: string[] = [],
  groupLines?: string[],
): { out: string; err: string; code: number | null } {
  const script = `${TRUSTED_DIRECTORY_FUNCTIONS}\n${PRIVATE_DIRECTORY_FUNCTIONS}\n${JOB_FILE_FUNCTIONS}\n${body}`;
  let argv = ['sh', '-c', script, 'x', ...args];
  if (groupLines) {
    const groups = join(scratch, `group-${groupLines.length}-${Date.now()}`);
    writeFileSync(groups, `${readFileSync('/etc/group', 'utf8')}${groupLines.join('\n')}\n`);
    chmodSync(groups, 0o644);
    const bind = 'mount --bind "$1" /etc/group && shift && exec "$@"';
    argv = ['unshare', '-m', '--propagation', 'private', 'sh', '-c', bind, 'ns', groups, ...argv];
  }
  const [program, ...rest] = argv as [string, ...string[]];
  const result = spawnSync(program, rest, { encoding: 'utf8' });
  return { out: result.stdout, err: result.stderr, code: result.status };
}

function dir(name: string, mode = 0o700): string {
  const path = join(scratch, name);
  mkdirSync(path, { recursive: true });
  chmodSync(path, mode);
  return path;
}

describe('make_trusted_dir (the work directory, checked on the target before anything is made)', () => {
  it('makes what is missing, mode 0700, below directories that are the user’s or root’s', () => {
    const base = dir('fine');
    const wanted = join(base, 'a', 'b');
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted]).code).toBe(0);
    expect(statSync(join(base, 'a')).mode & 0o7777).toBe(0o700);
    expect(statSync(wanted).mode & 0o7777).toBe(0o700);
  });

  it('refuses a directory on the way that its group or others may write, naming it, its owner and mode, and the fix; makes nothing', () => {
    const shared = dir('shared', 0o775);
    // A group other users are in (a group of the user's alone is the user's: isSoloGroup).
    chownSync(shared, ME, OTHER);
    const wanted = join(shared, 'runs');
    const result = sh('make_trusted_dir "$1" "work directory"', [wanted]);
    expect(result.code).toBe(23);
    expect(result.err).toBe(
      `yonder: Refusing the work directory ${wanted}: ${shared} (owner ${user(ME)}, mode 0775) is writable by its group, so another user could change what yonder reads or runs there. Fix: chmod go-w ${shared} (or, for a directory all may share, chmod +t ${shared} as /tmp has).\n`,
    );
    expect(readdirSync(shared)).toEqual([]);
    chmodSync(shared, 0o777);
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted]).err).toContain(
      'is writable by its group and others',
    );
    // Sticky, as /tmp: what is the user's in it, nobody else may move.
    chmodSync(shared, 0o1777);
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted]).code).toBe(0);
  });

  it('accepts directories its group can write when the group is the user’s alone (umask 002), as core does', () => {
    expect(ME, 'this test runs as root, whose group 0 is its own').toBe(0);
    const project = dir('solo-group', 0o775);
    chownSync(project, ME, 0);
    const wanted = join(project, 'runs');
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted])).toMatchObject({
      code: 0,
      err: '',
    });
    chmodSync(wanted, 0o770);
    chownSync(wanted, ME, 0);
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted])).toMatchObject({
      code: 0,
      err: '',
    });
    chownSync(wanted, ME, OTHER);
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted]).err).toContain(
      'mode 0770) is writable by its group,',
    );
  });

  it('refuses the user’s own group when a second entry of its gid (groupadd -o) lists another user, as initgroups gives them the gid', () => {
    expect(ME, 'this test runs as root, whose group 0 is its own').toBe(0);
    const project = dir('solo-group-twice', 0o775);
    chownSync(project, ME, 0);
    const wanted = join(project, 'runs');
    // getent group 0 still answers with root's own line alone; getent group lists both.
    const alias = [`root-share:x:0:${user(OTHER).split(' ')[0]}`];
    expect(sh('getent group 0', [], alias).out).toBe('root:x:0:\n');
    const result = sh('make_trusted_dir "$1" "work directory"', [wanted], alias);
    expect(result.code).toBe(23);
    expect(result.err).toContain(
      `${project} (owner ${user(ME)}, mode 0775) is writable by its group,`,
    );
    expect(readdirSync(project)).toEqual([]);
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted], ['root-too:x:0:root']).code).toBe(
      0,
    );
  });

  it('refuses, in the 10 s core gives it, a group of the user’s own when getent hangs (a directory service that does not answer)', () => {
    const project = dir('solo-group-hang', 0o775);
    chownSync(project, ME, 0);
    const shims = dir('hanging-getent', 0o755);
    writeFileSync(join(shims, 'getent'), '#!/bin/sh\nexec sleep 120\n', { mode: 0o755 });
    const result = spawnSync(
      'sh',
      ['-c', `${TRUSTED_DIRECTORY_FUNCTIONS}\ntrusted_dir "$1" "work directory"`, 'x', project],
      {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${shims}:${process.env.PATH}` },
        timeout: 60_000,
      },
    );
    expect(result.signal, 'the check waited on getent past its own limit').toBeNull();
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `${project} (owner ${user(ME)}, mode 0775) is writable by its group,`,
    );
  });

  it('refuses group-write that is an access control list’s mask (setfacl -m u:OTHER:rwx), though the group is the user’s alone', () => {
    expect(ME, 'this test runs as root, whose group 0 is its own').toBe(0);
    const project = dir('solo-group-acl', 0o755);
    chownSync(project, ME, 0);
    spawnSync('setfacl', ['-m', `u:${OTHER}:rwx`, project], { stdio: 'inherit' });
    expect(statSync(project).mode & 0o7777).toBe(0o775);
    const wanted = join(project, 'runs');
    const result = sh('make_trusted_dir "$1" "work directory"', [wanted]);
    expect(result.code).toBe(23);
    expect(result.err).toContain(
      `${project} (owner ${user(ME)}, mode 0775) is writable by the users and groups its access control list names, so another user could change what yonder reads or runs there. Fix: chmod go-w ${project}`,
    );
    expect(readdirSync(project)).toEqual([]);
    chmodSync(project, 0o755);
    expect(sh('make_trusted_dir "$1" "work directory"', [wanted]).code).toBe(0);
    spawnSync('setfacl', ['-m', `u:${OTHER}:rwx`, wanted]);
    expect(sh('trusted_dir "$1" "work directory"', [wanted]).err).toContain(
      `${wanted} (owner ${user(ME)}, mode 0770) is writable by the users and groups its access control list names`,
    );
  });

  it('refuses a work directory that is another user’s, or writable by others itself, or not a directory', () => {
    const theirs = dir('theirs');
    chownSync(theirs, OTHER, OTHER);
    const result = sh('make_trusted_dir "$1" "work directory"', [theirs]);
    expect(result.code).toBe(23);
    expect(result.err).toContain(
      `${theirs} (owner ${user(OTHER)}, mode 0700) belongs to another user, not to you (${user(ME)})`,
    );
    expect(result.err).toContain(`move it aside (mv ${theirs} ${theirs}.untrusted)`);
    const open = dir('open-self', 0o1777);
    chownSync(open, ME, OTHER);
    expect(sh('make_trusted_dir "$1" "work directory"', [open]).err).toContain(
      `${open} (owner ${user(ME)}, mode 01777) is writable by its group and others, so another user could change what yonder reads or runs there. Fix: chmod go-w ${open}`,
    );
    const file = join(dir('holder'), 'file');
    writeFileSync(file, '');
    chmodSync(file, 0o600);
    expect(sh('make_trusted_dir "$1" "work directory"', [file]).err).toContain(
      'is not a directory',
    );
  });

  it('follows a link of the user’s own; refuses one another user made, and one inside a directory of theirs', () => {
    const target = dir('target');
    const mine = join(dir('links'), 'mine');
    symlinkSync(target, mine);
    expect(sh('make_trusted_dir "$1" "work directory"', [join(mine, 'w')]).code).toBe(0);
    expect(readdirSync(target)).toEqual(['w']);
    const planted = join(scratch, 'links', 'planted');
    symlinkSync(dir('attacker-place', 0o777), planted);
    lchownSync(planted, OTHER, OTHER);
    const result = sh('make_trusted_dir "$1" "work directory"', [join(planted, 'w')]);
    expect(result.code).toBe(23);
    expect(result.err).toContain(
      `${planted} (owner ${user(OTHER)}, mode 0777) is a symbolic link made by another user`,
    );
    expect(readdirSync(join(scratch, 'attacker-place'))).toEqual([]);
    const above = dir('their-parent');
    chownSync(above, OTHER, OTHER);
    expect(sh('make_trusted_dir "$1" "work directory"', [join(above, 'w')]).err).toContain(
      `${above} (owner ${user(OTHER)}, mode 0700) belongs to another user, neither to you (${user(ME)}) nor to root`,
    );
  });

  it('resolves `..` and links as the kernel does: the directory checked is the one used', () => {
    const real = dir('real/inner');
    const via = join(scratch, 'via');
    symlinkSync(real, via);
    expect(sh('make_trusted_dir "$1" "work directory"', [`${via}/../inner/./x`]).code).toBe(0);
    expect(readdirSync(real)).toEqual(['x']);
    chmodSync(join(scratch, 'real'), 0o777);
    expect(sh('make_trusted_dir "$1" "work directory"', [`${via}/x`]).err).toContain(
      `${join(scratch, 'real')} (owner ${user(ME)}, mode 0777) is writable`,
    );
  });
});

describe('private_dirs / enter_private (a job directory is read only when it is the user’s, 0700, and no link)', () => {
  it('enters a private directory (setgid inherited aside), and nothing else', () => {
    const good = dir('jobs/good');
    const setgid = dir('jobs/setgid', 0o2700);
    const open = dir('jobs/open', 0o750);
    const theirs = dir('jobs/theirs');
    chownSync(theirs, OTHER, OTHER);
    const link = join(scratch, 'jobs', 'link');
    symlinkSync(good, link);
    const body = `private_dirs 1 "$@"
for d in "$@"; do cd /; if enter_private "$d"; then echo "in $(pwd -P)"; else echo out; fi; done`;
    const result = sh(body, [good, setgid, open, theirs, link, '', 'relative']);
    expect(result.out.split('\n').filter(Boolean)).toEqual([
      `in ${good}`,
      `in ${setgid}`,
      'out',
      'out',
      'out',
      'out',
      'out',
    ]);
  });

  it('takes the first of each group of arguments, as the poll and cancel scripts pass them', () => {
    const a = dir('groups/a');
    const b = dir('groups/b');
    const result = sh('private_dirs 3 "$@"; printf "%s\\n" "$private"; echo "$#"', [
      a,
      '1',
      '2',
      b,
      '3',
      '4',
    ]);
    expect(result.out).toBe(`${a}\n${b}\n6\n`);
  });
});

describe('put (a file replaced by a temporary under noclobber, then renamed)', () => {
  it('never writes through a link at the name or at its temporary', () => {
    const job = dir('put-job');
    const victim = join(scratch, 'important.txt');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(job, 'exit-code'));
    symlinkSync(victim, join(job, '.exit-code.tmp'));
    const result = sh('cd "$1" && put exit-code 42 && cat exit-code', [job]);
    expect(result.out).toBe('42\n');
    expect(spawnSync('cat', [victim], { encoding: 'utf8' }).stdout).toBe('precious\n');
    expect(statSync(join(job, 'exit-code')).isFile()).toBe(true);
  });

  it('clock gives epoch seconds, with a fraction where date has %N', () => {
    const result = sh('clock; echo "$now"');
    expect(result.out).toMatch(/^\d{10}(\.\d+)?\n$/);
    expect(Math.abs(Number(result.out) - Date.now() / 1000)).toBeLessThan(60);
  });
});
