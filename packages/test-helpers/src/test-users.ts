/**
 * The two unprivileged users of the shared-machine tests — a victim who runs the built CLI and
 * an attacker who plants things — since root passes every permission check: their accounts
 * (made by scripts/test-users.sh when missing), directories of theirs, and programs and the CLI
 * run as one of them with a clean environment.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type InstalledCli, installCli } from './install-cli.js';
import { REPOSITORY_ROOT } from './repository.js';
import { CLI_BIN } from './run-cli.js';

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

const cleanups: Array<() => void> = [];

/** The account `name`, or null when there is none. */
export function lookUp(name: string): TestUser | null {
  const entry = spawnSync('getent', ['passwd', name], { encoding: 'utf8' });
  if (entry.status !== 0) return null;
  const [, , uid, gid, , home] = entry.stdout.trim().split(':');
  return { name, uid: Number(uid), gid: Number(gid), home: home as string };
}

const USERS_SCRIPT = join(REPOSITORY_ROOT, 'scripts/test-users.sh');

/**
 * The victim (`yonder-victim`) and the attacker (`yonder-attacker`), made by
 * scripts/test-users.sh when missing. Fails, never skips, when the tests do not run as root or
 * the victim cannot run node and the built CLI.
 */
export function requireUsers(): { victim: TestUser; attacker: TestUser } {
  if (process.getuid?.() !== 0)
    throw new Error(
      'The shared-machine tests run yonder as two unprivileged users and need root to do so. Run them as root (scripts/test-all.sh does).',
    );
  if (spawnSync('runuser', ['--help'], { stdio: 'ignore' }).error)
    throw new Error('runuser (util-linux) is missing: apt-get install util-linux');
  const names = [
    process.env.YONDER_TEST_VICTIM ?? 'yonder-victim',
    process.env.YONDER_TEST_ATTACKER ?? 'yonder-attacker',
  ] as const;
  if (
    names.some((name) => lookUp(name) === null) ||
    spawnSync('bash', [USERS_SCRIPT, 'status'], { stdio: 'ignore' }).status !== 0
  )
    execFileSync('bash', [USERS_SCRIPT], { stdio: ['ignore', 'ignore', 'inherit'] });
  const [victim, attacker] = names.map(lookUp);
  if (!victim || !attacker)
    throw new Error(`The users ${names.join(' and ')} are missing: bash ${USERS_SCRIPT}`);
  const version = spawnSync(
    'runuser',
    ['-u', victim.name, '--', process.execPath, CLI_BIN, '--version'],
    { encoding: 'utf8' },
  );
  if (version.status !== 0)
    throw new Error(
      `${victim.name} cannot run ${process.execPath} ${CLI_BIN} (${version.stderr.trim()}): node and the checkout must be readable by every user.`,
    );
  return { victim, attacker };
}

/**
 * The gid of the group project's group (`yonder-lab`) the victim and the attacker are both in,
 * made by scripts/test-users.sh with them (call requireUsers first).
 */
export function labGroup(): number {
  const name = process.env.YONDER_TEST_GROUP ?? 'yonder-lab';
  const entry = spawnSync('getent', ['group', name], { encoding: 'utf8' });
  const gid = entry.stdout.split(':')[2];
  if (entry.status !== 0 || !gid)
    throw new Error(`The group ${name} is missing: bash ${USERS_SCRIPT}`);
  return Number(gid);
}

/**
 * The two accounts (as requireUsers) and the built CLI installed where both can run it, with
 * the workspace packages in `extra` (as installCli); the install is removed by cleanupUsers.
 */
export function usersWithCli(extra: readonly string[] = []): {
  victim: TestUser;
  attacker: TestUser;
  cli: InstalledCli;
} {
  const users = requireUsers();
  const cli = installCli(extra);
  cleanups.push(() => cli.remove());
  return { ...users, cli };
}

/** A fresh directory owned by `user` (mode 0700 unless `mode` says), removed by `cleanupUsers`. */
export function ownedDir(user: TestUser, prefix: string, mode = 0o700): string {
  const dir = mkdtempSync(join(user.home, `yonder-${prefix}-`));
  chownSync(dir, user.uid, user.gid);
  execFileSync('chmod', [mode.toString(8), dir]);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh directory under /tmp, owned by root with `mode`, removed by `cleanupUsers`. */
export function rootDir(prefix: string, mode: number): string {
  const dir = mkdtempSync(join(tmpdir(), `yonder-${prefix}-`));
  execFileSync('chmod', [mode.toString(8), dir]);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Register a cleanup for `cleanupUsers` (run last first). */
export function onCleanup(action: () => void): void {
  cleanups.push(action);
}

/** Run every cleanup registered, last first; never throws. */
export function cleanupUsers(): void {
  while (cleanups.length > 0) {
    try {
      cleanups.pop()?.();
    } catch {
      /* best effort */
    }
  }
}

/** Run `argv` as `user` to its end (in `cwd`, their home by default); fails the test when it fails. */
export function asUser(user: TestUser, argv: readonly string[], cwd?: string): string {
  const result = spawnSync('runuser', ['-u', user.name, '--', ...argv], {
    cwd: cwd ?? user.home,
    encoding: 'utf8',
  });
  if (result.status !== 0)
    throw new Error(
      `as ${user.name}: ${argv.join(' ')} exited ${result.status}: ${result.stderr.trim()}`,
    );
  return result.stdout;
}

/** Start `argv` as `user` in the background (killed by `cleanupUsers`, by its own process group). */
export function startAsUser(user: TestUser, argv: readonly string[]): ChildProcess {
  const child = spawn('runuser', ['-u', user.name, '--', ...argv], {
    cwd: '/',
    detached: true,
    stdio: 'ignore',
  });
  cleanups.push(() => {
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  });
  return child;
}
