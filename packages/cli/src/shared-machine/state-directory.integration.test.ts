/**
 * Issue 11, attack 1: another user's state directory (or one others can write) must never make
 * the victim run the attacker's templates; yonder refuses it, naming the path, its owner and
 * mode and the fix. An ordinary install still works, with its directories made private.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  asUser,
  cleanupUsers,
  type InstalledCli,
  jsonOf,
  onCleanup,
  ownedDir,
  runAs,
  type TestUser,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;
let cli: InstalledCli;

beforeAll(() => {
  ({ victim, attacker, cli } = usersWithCli(['@yonder/backend-command']));
});
afterAll(() => cleanupUsers());

/** A directory in /tmp that `owner` made and left open to everyone (mode 0777). */
function openDirectory(owner: TestUser, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `yonder-${prefix}-`));
  chownSync(dir, owner.uid, owner.gid);
  chmodSync(dir, 0o777);
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The attacker's own ledger, put at `state` and opened to everyone: a `local` profile of the
 * command backend whose templates leave a file named for whoever runs them in `marks`, and an
 * active job of it (so that a refresh runs its status template). yonder itself refuses to
 * work in an open directory, so the attacker makes it in a private one and copies it over.
 */
async function plantLedger(state: string, marks: string): Promise<void> {
  const workshop = ownedDir(attacker, 'workshop');
  const env = { YONDER_STATE_DIR: join(workshop, 'state') };
  const mark = (what: string) => `touch ${marks}/${what}-$(id -un)`;
  const add = await runAs(
    attacker,
    cli.bin,
    [
      'profile',
      'add',
      'local',
      '--backend',
      'command',
      '--force',
      '--set',
      `submit=sh -c '${mark('submit')}; echo 7' {script}`,
      '--set',
      `status=sh -c '${mark('status')}; echo "$1 RUNNING"' status {external_ids}`,
      '--set',
      'cancel=true {external_ids}',
    ],
    { env },
  );
  expect(add.code, add.stderr).toBe(0);
  const submitted = await runAs(attacker, cli.bin, ['submit', '--', 'true'], { env });
  expect(submitted.code, submitted.stderr).toBe(0);
  asUser(attacker, ['cp', '-a', join(workshop, 'state'), state]);
  asUser(attacker, ['chmod', '-R', 'a+rwX', state]);
  expect(readdirSync(marks)).toContain(`submit-${attacker.name}`);
}

/** The marks a victim's run of the attacker's templates would have left. */
function victimMarks(marks: string): string[] {
  return readdirSync(marks).filter((name) => name.endsWith(`-${victim.name}`));
}

describe('a state directory that is not the victim’s own', () => {
  it('YONDER_STATE_DIR made by another user: submit and list refuse it; nothing of the attacker runs', async () => {
    const shared = openDirectory(attacker, 'shared-state');
    const state = join(shared, 'state');
    await plantLedger(state, shared);

    for (const args of [
      ['submit', '--json', '--', 'echo', 'hi'],
      ['list', '--json'],
      ['status', '7', '--json'],
    ]) {
      const result = await runAs(victim, cli.bin, args, {
        env: { YONDER_STATE_DIR: state },
      });
      expect(result.code, result.stderr).toBe(1);
      const error = jsonOf(result).error;
      expect(error.code).toBe('E_UNTRUSTED_PATH');
      expect(error.message).toContain(`Refusing the state directory ${state}`);
      expect(error.message).toContain(`owner ${attacker.name} (uid ${attacker.uid})`);
      expect(error.message).toContain('mode 0777');
      expect(error.message).toContain('Fix:');
    }
    expect(victimMarks(shared)).toEqual([]);
  });

  it('XDG_STATE_HOME in another user’s directory: refused, naming that directory', async () => {
    const xdg = openDirectory(attacker, 'shared-xdg');
    await plantLedger(join(xdg, 'yonder'), xdg);
    const result = await runAs(victim, cli.bin, ['submit', '--json', '--', 'echo', 'hi'], {
      env: { XDG_STATE_HOME: xdg },
    });
    expect(result.code).toBe(1);
    const error = jsonOf(result).error;
    expect(error.code).toBe('E_UNTRUSTED_PATH');
    expect(error.message).toContain(`${xdg} (owner ${attacker.name}`);
    expect(victimMarks(xdg)).toEqual([]);
  });

  it('the victim’s own state directory, left writable by others: refused with chmod go-w, fine once fixed', async () => {
    const home = ownedDir(victim, 'open-state');
    const state = join(home, 'state');
    const env = { YONDER_STATE_DIR: state };
    expect((await runAs(victim, cli.bin, ['submit', '--', 'true'], { env })).code).toBe(0);
    asUser(victim, ['chmod', '0777', state]);
    const refused = await runAs(victim, cli.bin, ['list', '--json'], { env });
    expect(refused.code).toBe(1);
    expect(jsonOf(refused).error.message).toContain(`Fix: chmod go-w ${state}`);
    asUser(victim, ['chmod', 'go-w', state]);
    const listed = await runAs(victim, cli.bin, ['list', '--json'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(jsonOf(listed).result).toHaveLength(1);
  });

  it('a profiles/ directory others can write, with a planted profile: refused before the profile is read', async () => {
    // The victim's own state directory, readable by all (0755, as an old umask made it), in
    // a sticky shared directory; only its profiles/ was left open.
    const state = mkdtempSync(join(tmpdir(), 'yonder-victim-open-profiles-'));
    chownSync(state, victim.uid, victim.gid);
    chmodSync(state, 0o755);
    onCleanup(() => rmSync(state, { recursive: true, force: true }));
    const marks = openDirectory(attacker, 'profile-marks');
    const env = { YONDER_STATE_DIR: state };
    expect((await runAs(victim, cli.bin, ['submit', '--', 'true'], { env })).code).toBe(0);
    asUser(victim, ['chmod', '0755', state]);
    asUser(victim, ['chmod', '0777', join(state, 'profiles')]);
    // The attacker, able to write there now, plants a command profile named local.
    const loot = openDirectory(attacker, 'loot');
    await plantLedger(join(loot, 'state'), marks);
    asUser(attacker, [
      'cp',
      join(loot, 'state', 'profiles', 'local.json'),
      join(state, 'profiles'),
    ]);
    const result = await runAs(victim, cli.bin, ['submit', '--json', '--', 'echo', 'hi'], { env });
    expect(result.code).toBe(1);
    const error = jsonOf(result).error;
    expect(error.code).toBe('E_UNTRUSTED_PATH');
    expect(error.message).toContain(join(state, 'profiles'));
    expect(error.message).toContain(`Fix: chmod go-w ${join(state, 'profiles')}`);
    expect(victimMarks(marks)).toEqual([]);
  });
});

describe('an ordinary install', () => {
  it('makes ~/.local/state/yonder and everything of the ledger private (0700 directories, 0600 files)', async () => {
    const home = ownedDir(victim, 'home');
    const env = { HOME: home };
    expect(
      (await runAs(victim, cli.bin, ['profile', 'add', 'loc', '--backend', 'local'], { env })).code,
    ).toBe(0);
    const id = (
      await runAs(victim, cli.bin, ['submit', '--profile', 'loc', '--', 'true'], { env })
    ).stdout.trim();
    const waited = await runAs(victim, cli.bin, ['wait', id], { env });
    expect(waited.code, waited.stderr).toBe(0);
    expect((await runAs(victim, cli.bin, ['list', '--all'], { env })).code).toBe(0);
    for (const dir of ['.local', '.local/state', '.local/state/yonder'])
      expect(statSync(join(home, dir)).mode & 0o777, dir).toBe(0o700);
    const state = join(home, '.local/state/yonder');
    const loose: string[] = [];
    for (const name of readdirSync(state, { recursive: true }).map(String)) {
      if (name === 'runs' || name.startsWith('runs/')) continue; // the job's own files
      const info = statSync(join(state, name));
      const wanted = info.isDirectory() ? 0o700 : 0o600;
      if ((info.mode & 0o777) !== wanted || info.uid !== victim.uid)
        loose.push(`${name} ${(info.mode & 0o777).toString(8)} uid ${info.uid}`);
    }
    expect(loose).toEqual([]);
  });

  it('a state directory of its own under /tmp (sticky) is fine', async () => {
    const state = join(tmpdir(), `yonder-victim-state-${process.pid}-${Date.now()}`);
    onCleanup(() => rmSync(state, { recursive: true, force: true }));
    const result = await runAs(victim, cli.bin, ['submit', '--', 'true'], {
      env: { YONDER_STATE_DIR: state },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(state)).toBe(true);
    expect(statSync(state).mode & 0o777).toBe(0o700);
    expect(statSync(state).uid).toBe(victim.uid);
  });
});
