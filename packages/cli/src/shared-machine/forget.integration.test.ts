/**
 * `yonder rm` and `prune` on a shared machine, run as an unprivileged victim while an
 * unprivileged attacker plants links and directories in a shared (sticky) work directory where
 * the victim's job directories were: yonder removes only the victim's own job directories, never
 * follows a link, and leaves every other file of the victim's and of the attacker's alone.
 */
import { lchownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
