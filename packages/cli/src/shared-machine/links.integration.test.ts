/**
 * Issue 11, attack 1 (links): links another user planted in the victim's state directory —
 * while it was open to them, before the victim closed it as yonder asked — must never make
 * yonder append to, overwrite or delete the victim's own files through them.
 */
import {
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  cleanupUsers,
  type InstalledCli,
  jsonOf,
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

/** A file of the victim's that yonder must leave alone. */
function precious(dir: string, name: string): string {
  const path = join(dir, name);
  writeFileSync(path, 'the victim’s own\n');
  lchownSync(path, victim.uid, victim.gid);
  return path;
}

/** A link at `path` to `target`, owned by the attacker, as they would have left it. */
function plantLink(path: string, target: string): void {
  rmSync(path, { recursive: true, force: true });
  symlinkSync(target, path);
  lchownSync(path, attacker.uid, attacker.gid);
}

async function ledger(prefix: string) {
  const home = ownedDir(victim, prefix);
  const state = join(home, 'state');
  const env = { YONDER_STATE_DIR: state };
  const run = (args: string[]) => runAs(victim, cli.bin, args, { env });
  const first = await run(['submit', '--', 'true']);
  expect(first.code, first.stderr).toBe(0);
  return { home, state, run };
}

describe('links planted in the victim’s state directory', () => {
  it('index.log as a link: submit refuses it and writes nothing through it', async () => {
    const { home, state, run } = await ledger('index-link');
    const target = precious(home, 'important.txt');
    plantLink(join(state, 'index.log'), target);
    const jobsBefore = readdirSync(join(state, 'jobs'), { recursive: true }).length;
    const submit = await run(['submit', '--json', '--', 'true']);
    expect(submit.code).toBe(1);
    const error = jsonOf(submit).error;
    expect(error.code).toBe('E_UNTRUSTED_PATH');
    expect(error.message).toContain(join(state, 'index.log'));
    expect(error.message).toContain(`rm ${join(state, 'index.log')}`);
    expect(readFileSync(target, 'utf8')).toBe('the victim’s own\n');
    // Refused before anything was recorded or started.
    expect(readdirSync(join(state, 'jobs'), { recursive: true }).length).toBe(jobsBefore);
    const list = await run(['list', '--json']);
    expect(list.code).toBe(1);
    expect(jsonOf(list).error.code).toBe('E_UNTRUSTED_PATH');
    expect(readFileSync(target, 'utf8')).toBe('the victim’s own\n');
  });

  it('the active/ directory as a link to the victim’s files: refused, nothing there removed', async () => {
    const { home, state, run } = await ledger('active-link');
    const running = (await run(['submit', '--', 'sleep', '30'])).stdout.trim();
    // A directory of the victim's holding a file named like the job, where the link leads.
    const keep = join(home, 'keep');
    mkdirSync(keep, { mode: 0o700 });
    lchownSync(keep, victim.uid, victim.gid);
    const file = precious(keep, running);
    renameSync(join(state, 'active'), join(home, 'active.real'));
    plantLink(join(state, 'active'), keep);
    for (const args of [
      ['list', '--json'],
      ['cancel', running, '--json'],
    ]) {
      const result = await run(args);
      expect(result.code).toBe(1);
      expect(jsonOf(result).error.message).toContain(join(state, 'active'));
    }
    expect(statSync(file).isFile()).toBe(true);
    // The victim removes the link, as the message says, and puts their own directory back:
    // the job is still theirs to stop.
    rmSync(join(state, 'active'));
    renameSync(join(home, 'active.real'), join(state, 'active'));
    const cancelled = await run(['cancel', running, '--json']);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(statSync(file).isFile()).toBe(true);
  });

  it('a probe cache entry as a link: the probe result replaces the link, never the file it points to', async () => {
    const { home, state, run } = await ledger('probe-link');
    const add = await run([
      'profile',
      'add',
      'cmd',
      '--backend',
      'command',
      '--set',
      'submit=true {script}',
      '--set',
      'status=true {external_ids}',
      '--set',
      'cancel=true {external_ids}',
    ]);
    expect(add.code, add.stderr).toBe(0);
    expect((await run(['profile', 'check', 'cmd'])).code).toBe(0);
    const entries = readdirSync(join(state, 'cache')).filter((name) => name.startsWith('probe-'));
    expect(entries.length).toBeGreaterThan(0);
    const target = precious(home, 'important.txt');
    for (const entry of entries) plantLink(join(state, 'cache', entry), target);
    const check = await run(['profile', 'check', 'cmd']);
    expect(check.code, check.stderr).toBe(0);
    expect(readFileSync(target, 'utf8')).toBe('the victim’s own\n');
    const written = entries
      .map((entry) => lstatSync(join(state, 'cache', entry)))
      .filter((info) => !info.isSymbolicLink());
    expect(written.length).toBeGreaterThan(0);
    for (const info of written) expect(info.uid).toBe(victim.uid);
  });
});
