/**
 * Issue 11, disk pressure: with the ledger's file system out of inodes at every point of a
 * submit, a job that started is recorded (so a retry never runs it twice) and one that was not
 * recorded never started; read commands keep working on a full disk. Real tmpfs mounts, the
 * CLI run as the victim.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
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
let cli: InstalledCli;

beforeAll(() => {
  ({ victim, cli } = usersWithCli());
});
afterAll(() => cleanupUsers());

/** A tmpfs of the victim's (0700) with at most `inodes` files, unmounted by the cleanups. */
function mountTmpfs(inside: string, options: string): string {
  const dir = join(inside, 'disk');
  mkdirSync(dir);
  execFileSync('mount', [
    '-t',
    'tmpfs',
    '-o',
    `${options},uid=${victim.uid},gid=${victim.gid},mode=0700`,
    'tmpfs',
    dir,
  ]);
  onCleanup(() => spawnSync('umount', ['-l', dir]));
  return dir;
}

/** Fill `disk` with empty files until exactly `left` inodes are free. */
function leaveInodes(disk: string, left: number): void {
  const fill = join(disk, 'fill');
  mkdirSync(fill, { recursive: true });
  let count = readdirSync(fill).length;
  while (statfsSync(disk).ffree > left) {
    writeFileSync(join(fill, String(count)), '');
    count += 1;
  }
  expect(statfsSync(disk).ffree).toBe(left);
}

function freeAll(disk: string): void {
  rmSync(join(disk, 'fill'), { recursive: true, force: true });
}

describe('a full disk under the state directory', () => {
  it('at every number of free inodes, a started job is recorded, and an unrecorded one never started', async () => {
    const home = ownedDir(victim, 'disk');
    const disk = mountTmpfs(home, 'size=32m,nr_inodes=600');
    const state = join(disk, 'state');
    const runs = join(home, 'runs');
    mkdirSync(runs, { mode: 0o700 });
    chownSync(runs, victim.uid, victim.gid);
    const env = { YONDER_STATE_DIR: state };
    const yonder = (args: string[]) => runAs(victim, cli.bin, args, { env });
    const add = await yonder(['profile', 'add', 'loc', '--backend', 'local', '--workdir', runs]);
    expect(add.code, add.stderr).toBe(0);
    // Some jobs, one of them still running, and refreshes that have seen them.
    const first = jsonOf(
      await yonder(['submit', '--profile', 'loc', '--json', '--', 'echo', 'first']),
    ).result.id;
    const long = jsonOf(
      await yonder(['submit', '--profile', 'loc', '--json', '--', 'sleep', '300']),
    ).result.id;
    onCleanup(() => spawnSync('runuser', ['-u', victim.name, '--', 'pkill', '-f', 'sleep 300']));
    expect((await yonder(['wait', first])).code).toBe(0);
    expect((await yonder(['list'])).code).toBe(0);

    const outcomes: string[] = [];
    for (let left = 0; left <= 10; left += 1) {
      const before = new Set(readdirSync(runs));
      leaveInodes(disk, left);
      const submit = await yonder([
        'submit',
        '--profile',
        'loc',
        '--json',
        '--',
        'echo',
        `left ${left}`,
      ]);
      const started = readdirSync(runs).filter((name) => !before.has(name));
      const doc = jsonOf(submit);
      if (doc.ok) {
        // Started and recorded as started: the record says so now, read without a refresh.
        expect(started, `left ${left}`).toEqual([doc.result.id]);
        const status = jsonOf(await yonder(['status', doc.result.id, '--no-refresh', '--json']));
        expect(status.result[0].state, `left ${left}`).not.toBe('submitting');
        expect(status.result[0].externalId, `left ${left}`).not.toBeNull();
        outcomes.push(`${left}: recorded`);
      } else {
        // Not recorded: then nothing may have started.
        expect(started, `left ${left}: ${doc.error.message}`).toEqual([]);
        expect(doc.error.code, `left ${left}`).toBe('E_STORE');
        expect(doc.error.message, `left ${left}`).toMatch(/disk is full/);
        outcomes.push(`${left}: refused`);
      }
      // Read commands work on the full disk, a refreshing list among them.
      for (const args of [
        ['list', '--json'],
        ['list', '--all', '--no-refresh', '--json'],
        ['status', long, '--json'],
      ]) {
        const read = await yonder(args);
        expect(
          read.code,
          `left ${left}: yonder ${args.join(' ')}: ${read.stdout}${read.stderr}`,
        ).toBe(0);
      }
      expect((await yonder(['logs', first])).stdout, `left ${left}`).toBe('first\n');
      freeAll(disk);
    }
    expect(outcomes[0]).toBe('0: refused');
    expect(outcomes.at(-1)).toBe('10: recorded');
    const cancel = await yonder(['cancel', long, '--json']);
    expect(jsonOf(cancel).result[0].state).toBe('cancelled');
  }, 300_000);

  it('with no space left at all, list, status and logs still answer', async () => {
    const home = ownedDir(victim, 'disk-full');
    const disk = mountTmpfs(home, 'size=512k');
    const state = join(disk, 'state');
    const env = { YONDER_STATE_DIR: state };
    const yonder = (args: string[]) => runAs(victim, cli.bin, args, { env });
    const done = jsonOf(await yonder(['submit', '--json', '--', 'echo', 'done'])).result.id;
    expect((await yonder(['wait', done])).code).toBe(0);
    const long = jsonOf(await yonder(['submit', '--json', '--', 'sleep', '300'])).result.id;
    onCleanup(() => spawnSync('runuser', ['-u', victim.name, '--', 'pkill', '-f', 'sleep 300']));
    expect((await yonder(['list'])).code).toBe(0);
    const filler = join(disk, 'fill');
    const chunk = Buffer.alloc(4096);
    try {
      for (;;) appendFileSync(filler, chunk);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    }
    for (const args of [
      ['list', '--json'],
      ['status', long, '--json'],
      ['status', done, '--json'],
    ]) {
      const read = await yonder(args);
      expect(read.code, `yonder ${args.join(' ')}: ${read.stdout}${read.stderr}`).toBe(0);
    }
    expect((await yonder(['logs', done])).stdout).toBe('done\n');
    const submit = jsonOf(await yonder(['submit', '--json', '--', 'true']));
    expect(submit.ok).toBe(false);
    expect(submit.error.message).toMatch(/disk is full/);
    rmSync(filler);
    expect(jsonOf(await yonder(['cancel', long, '--json'])).result[0].state).toBe('cancelled');
  }, 120_000);

  it('a job whose own log fills the disk and then exits 0 is recorded succeeded, exit 0; list still answers', async () => {
    // Issue 24 item 3: its exit code could not be written, so it was recorded failed/lost.
    const home = ownedDir(victim, 'disk-end');
    const disk = mountTmpfs(home, 'size=1m');
    const state = join(disk, 'state');
    const env = { YONDER_STATE_DIR: state };
    const yonder = (args: string[]) => runAs(victim, cli.bin, args, { env });
    const job = jsonOf(
      await yonder([
        'submit',
        '--json',
        '--',
        'sh',
        '-c',
        // Fill the disk with its own output, then end by itself with 0.
        'yes "the log fills the disk" || :; exit 0',
      ]),
    ).result.id;
    const waited = await yonder(['wait', job, '--timeout', '120']);
    expect(waited.code, `wait: ${waited.stdout}${waited.stderr}`).toBe(0);
    const status = jsonOf(await yonder(['status', job, '--json'])).result[0];
    expect([status.state, status.exitCode, status.reason]).toEqual(['succeeded', 0, null]);
    const listed = await yonder(['list', '--json']);
    expect(listed.code, listed.stdout + listed.stderr).toBe(0);
    // The disk is still (all but) full: the job's log was kept whole, nothing removed for room.
    expect(statfsSync(disk).bavail).toBeLessThan(16);
  }, 180_000);
});
