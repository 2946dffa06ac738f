/**
 * `yonder rm` and `prune` on a shared machine, run as an unprivileged victim while an
 * unprivileged attacker plants links and directories in a shared (sticky) work directory where
 * the victim's job directories were: yonder removes only the victim's own job directories, never
 * follows a link, and leaves every other file of the victim's and of the attacker's alone. A
 * profile's retention does the same on its own, when its time has come by the wall clock
 * (stepped forward with libfaketime).
 */
import { existsSync, lchownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  asUser,
  cleanupUsers,
  ownedDir,
  requireCliBuild,
  requireUsers,
  rootDir,
  type TestUser,
  yonderAs,
  yonderJsonAs,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/** The environment that sets the CLI's wall clock `offset` ahead (`+20d`), not its monotonic one. */
function clockAhead(offset: string): Record<string, string> {
  if (!existsSync(LIBFAKETIME))
    throw new Error(
      `${LIBFAKETIME} is missing: run scripts/test-all.sh as root (it installs faketime)`,
    );
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

beforeAll(() => {
  requireCliBuild();
  ({ victim, attacker } = requireUsers());
});
afterAll(() => cleanupUsers());

/** A tree of the victim's that no yonder command may touch. */
function precious(home: string): { dir: string; file: string } {
  const dir = join(home, 'precious');
  mkdirSync(dir);
  const file = join(dir, 'thesis.txt');
  writeFileSync(file, 'years of work\n');
  for (const path of [dir, file]) lchownSync(path, victim.uid, victim.gid);
  return { dir, file };
}

describe('forgetting jobs in a shared work directory', () => {
  it('removes the victim’s job directories only: links, and what the attacker put in place of the work directory, are kept', async () => {
    const home = ownedDir(victim, 'forget');
    const state = join(home, 'state');
    const { dir, file } = precious(home);
    const shared = rootDir('forget-shared', 0o1777);
    const workdir = join(shared, 'jobs');
    const added = await yonderAs(victim, state, [
      'profile',
      'add',
      'w',
      '--backend',
      'local',
      '--workdir',
      workdir,
    ]);
    expect(added.code, added.stderr).toBe(0);
    const submit = async (argv: string[]): Promise<string> => {
      const result = await yonderAs(victim, state, ['submit', '--profile', 'w', '--', ...argv]);
      expect(result.code, result.stderr).toBe(0);
      const id = result.stdout.trim();
      expect((await yonderAs(victim, state, ['wait', id, '--timeout', '60'])).code).toBe(0);
      return id;
    };
    // The job itself leaves links to the victim's files in its directory: removed, not followed.
    const own = await submit([
      'sh',
      '-c',
      'ln -s "$1" "$YONDER_JOB_DIR/l1"; ln -s "$2" "$YONDER_JOB_DIR/l2"',
      'sh',
      file,
      dir,
    ]);
    const rm = await yonderJsonAs(victim, state, ['rm', own]);
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.doc.result).toEqual([
      { id: own, state: 'succeeded', removed: true, files: 'removed' },
    ]);
    expect(readFileSync(file, 'utf8')).toBe('years of work\n');
    expect(asUser(victim, ['ls', dir]).trim()).toBe('thesis.txt');

    // The victim clears the shared work directory by hand; the attacker puts a link to the
    // victim's tree in its place, where the victim keeps a directory named like a job.
    const linked = await submit(['true']);
    const named = join(dir, linked);
    asUser(victim, ['mkdir', named]);
    asUser(victim, ['sh', '-c', `echo data > '${join(named, 'data.txt')}'`]);
    asUser(victim, ['rm', '-rf', workdir]);
    asUser(attacker, ['ln', '-s', dir, workdir]);
    const viaLink = await yonderJsonAs(victim, state, ['rm', linked]);
    expect(viaLink.code).toBe(1);
    expect(viaLink.doc.result[0]).toMatchObject({ id: linked, removed: true, files: 'kept' });
    expect(viaLink.doc.result[0].message).toContain('symbolic link made by another user');
    expect(readFileSync(join(named, 'data.txt'), 'utf8')).toBe('data\n');

    // Or a directory of the attacker's own, holding one named like the victim's next job.
    asUser(attacker, ['rm', '-f', workdir]);
    const squatted = await submit(['true']);
    asUser(victim, ['rm', '-rf', workdir]);
    asUser(attacker, ['mkdir', '-p', join(workdir, squatted)]);
    asUser(attacker, ['sh', '-c', `echo mine > '${join(workdir, squatted, 'attacker.txt')}'`]);
    asUser(attacker, ['chmod', '755', workdir]);
    const prune = await yonderJsonAs(victim, state, ['prune', '--older-than', '0s']);
    expect(prune.code).toBe(1);
    expect(prune.doc.result).toEqual([
      expect.objectContaining({ id: squatted, removed: true, files: 'kept' }),
    ]);
    expect(prune.doc.result[0].message).toContain('belongs to another user');
    expect(readFileSync(join(workdir, squatted, 'attacker.txt'), 'utf8')).toBe('mine\n');
    expect(readFileSync(file, 'utf8')).toBe('years of work\n');
    expect((await yonderAs(victim, state, ['list', '--all', '-q'])).stdout).toBe('');
  }, 120_000);
});

describe('retention', () => {
  it("forgets a profile's finished jobs once their time has come, with their own directories only, and nothing of another profile", async () => {
    const home = ownedDir(victim, 'retention');
    const state = join(home, 'state');
    const shared = rootDir('retention-shared', 0o1777);
    const workdir = join(shared, 'jobs');
    for (const [name, extra] of [
      ['kept', ['--retention', '30d']],
      ['forever', []],
    ] as const) {
      const added = await yonderAs(victim, state, [
        'profile',
        'add',
        name,
        '--backend',
        'local',
        '--workdir',
        workdir,
        ...extra,
      ]);
      expect(added.code, added.stderr).toBe(0);
    }
    const shown = await yonderAs(victim, state, ['profile', 'show', 'kept']);
    expect(shown.stdout).toContain('Retention: 30d');
    const submit = async (profile: string): Promise<string> => {
      const result = await yonderAs(victim, state, ['submit', '--profile', profile, '--', 'true']);
      expect(result.code, result.stderr).toBe(0);
      const id = result.stdout.trim();
      expect((await yonderAs(victim, state, ['wait', id, '--timeout', '60'])).code).toBe(0);
      return id;
    };
    const old = await submit('kept');
    const other = await submit('forever');
    const jobDir = async (id: string): Promise<string> =>
      (await yonderJsonAs(victim, state, ['status', id])).doc.result[0].data.jobDir;
    const oldDir = await jobDir(old);
    const otherDir = await jobDir(other);
    expect(oldDir.startsWith(`${workdir}/`)).toBe(true);
    expect(existsSync(oldDir)).toBe(true);
    // A file of the victim's beside the job directories, and the attacker's beside the work
    // directory, stay.
    asUser(victim, ['sh', '-c', `echo notes > '${join(workdir, 'notes.txt')}'`]);
    asUser(attacker, ['sh', '-c', `echo mine > '${join(shared, 'attacker.txt')}'`]);

    // Twenty days on: within the retention, nothing goes.
    const early = await yonderAs(victim, state, ['list', '--all', '-q'], clockAhead('+20d'));
    expect(early.code, early.stderr).toBe(0);
    expect(early.stdout.split('\n').filter(Boolean).sort()).toEqual([old, other].sort());

    // Thirty-one days on (and more than an hour after that sweep): the old job is forgotten.
    const late = await yonderAs(victim, state, ['list', '--all', '-q'], clockAhead('+31d'));
    expect(late.code, late.stderr).toBe(0);
    expect(late.stdout.trim()).toBe(other);
    expect(existsSync(oldDir)).toBe(false);
    expect(existsSync(otherDir)).toBe(true);
    expect(readFileSync(join(workdir, 'notes.txt'), 'utf8')).toBe('notes\n');
    expect(readFileSync(join(shared, 'attacker.txt'), 'utf8')).toBe('mine\n');

    // Hand-edited nonsense is refused by field, and a bad flag by name.
    const bad = await yonderAs(victim, state, ['profile', 'edit', 'kept', '--retention', '10s']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--retention must be a duration from 60s to 3650d');
    const none = await yonderAs(victim, state, ['profile', 'edit', 'kept', '--retention', 'none']);
    expect(none.code, none.stderr).toBe(0);
    expect((await yonderAs(victim, state, ['profile', 'show', 'kept'])).stdout).not.toContain(
      'Retention',
    );
  }, 120_000);
});
