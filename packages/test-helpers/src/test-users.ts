/**
 * Two unprivileged users for the shared-machine tests — a victim who runs the built CLI and an
 * attacker who plants things — since root passes every permission check. (A minimal stand-in for
 * the trust-ledger branch's run-as-user.ts and scripts/test-users.sh, with the same user names;
 * the two are to be unified.)
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_BIN, type CliResult, collectProcess, type Raw } from '@yonder/test-helpers';

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const cleanups: Array<() => void> = [];

/** The account `name`, or null when there is none. */
export function lookUp(name: string): TestUser | null {
  const entry = spawnSync('getent', ['passwd', name], { encoding: 'utf8' });
  if (entry.status !== 0) return null;
  const [, , uid, gid, , home] = entry.stdout.trim().split(':');
  return { name, uid: Number(uid), gid: Number(gid), home: home as string };
}

/** `name`, made (with a private home) when missing, as scripts/test-users.sh makes it. */
function ensureUser(name: string): TestUser {
  if (lookUp(name) === null) {
    if (spawnSync('getent', ['group', name]).status !== 0) execFileSync('groupadd', [name]);
    execFileSync('useradd', ['--create-home', '--shell', '/bin/bash', '--gid', name, name]);
  }
  const user = lookUp(name) as TestUser;
  execFileSync('chmod', ['0700', user.home]);
  return user;
}

/**
 * The victim (`yonder-victim`) and the attacker (`yonder-attacker`). Fails, never skips, when
 * the tests do not run as root or the victim cannot run the built CLI.
 */
export function requireUsers(): { victim: TestUser; attacker: TestUser } {
  if (process.getuid?.() !== 0)
    throw new Error('These tests run yonder as two unprivileged users: run them as root.');
  const victim = ensureUser(process.env.YONDER_TEST_VICTIM ?? 'yonder-victim');
  const attacker = ensureUser(process.env.YONDER_TEST_ATTACKER ?? 'yonder-attacker');
  const version = spawnSync(
    'runuser',
    ['-u', victim.name, '--', process.execPath, CLI_BIN, '--version'],
    {
      encoding: 'utf8',
    },
  );
  if (version.status !== 0)
    throw new Error(
      `${victim.name} cannot run ${CLI_BIN} (${version.stderr.trim()}): the checkout and node must be readable by every user.`,
    );
  return { victim, attacker };
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

/** Run `argv` as `user` to its end; fails the test when it fails. */
export function asUser(user: TestUser, argv: readonly string[]): string {
  const result = spawnSync('runuser', ['-u', user.name, '--', ...argv], {
    cwd: '/',
    encoding: 'utf8',
  });
  if (result.status !== 0)
    throw new Error(`as ${user.name}: ${argv.join(' ')}: ${result.stderr.trim()}`);
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

/** `yonder ARGS` as `user` with a clean environment: HOME, PATH, USER, the ledger, and `env`. */
export async function yonderAs(
  user: TestUser,
  state: string,
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<CliResult> {
  const assignments = Object.entries({
    HOME: user.home,
    PATH: SYSTEM_PATH,
    USER: user.name,
    LOGNAME: user.name,
    NO_COLOR: '1',
    YONDER_STATE_DIR: state,
    XDG_CONFIG_HOME: join(state, '.no-config'),
    ...env,
  }).map(([name, value]) => `${name}=${value}`);
  const started = Date.now();
  const child = spawn(
    'runuser',
    ['-u', user.name, '--', 'env', '-i', ...assignments, process.execPath, CLI_BIN, ...args],
    { cwd: user.home, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    return await collectProcess(child, started);
  } finally {
    clearTimeout(timer);
  }
}

/** `yonder ARGS --json` as `user` (`--json` goes before any `--`), parsed. */
export async function yonderJsonAs(
  user: TestUser,
  state: string,
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<CliResult & { doc: Raw }> {
  const split = args.indexOf('--');
  const withJson =
    split < 0 ? [...args, '--json'] : [...args.slice(0, split), '--json', ...args.slice(split)];
  const result = await yonderAs(user, state, withJson, env, timeoutMs);
  try {
    return { ...result, doc: JSON.parse(result.stdout) };
  } catch {
    throw new Error(
      `yonder ${withJson.join(' ')} printed no JSON (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}
