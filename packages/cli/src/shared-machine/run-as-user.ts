/**
 * Running yonder as the unprivileged test users of scripts/test-users.sh — a victim and an
 * attacker — since root passes every permission check: their accounts, private scratch
 * directories in their homes, and the built CLI run with a clean environment as one of them.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPOSITORY } from './install-cli.js';

export const VICTIM = process.env.YONDER_TEST_VICTIM ?? 'yonder-victim';
export const ATTACKER = process.env.YONDER_TEST_ATTACKER ?? 'yonder-attacker';
const USERS_SCRIPT = join(REPOSITORY, 'scripts/test-users.sh');
/** A PATH every user can use (the test process's own may hold root's directories). */
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export interface UserResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const cleanups: Array<() => void> = [];

function lookUp(name: string): TestUser | null {
  const entry = spawnSync('getent', ['passwd', name], { encoding: 'utf8' });
  if (entry.status !== 0) return null;
  const [, , uid, gid, , home] = entry.stdout.trim().split(':');
  return { name, uid: Number(uid), gid: Number(gid), home: home as string };
}

/**
 * The victim and the attacker, made by scripts/test-users.sh when missing. Fails (never skips)
 * when the test process is not root or the users cannot run node.
 */
export function requireTestUsers(): { victim: TestUser; attacker: TestUser } {
  if (process.getuid?.() !== 0) {
    throw new Error(
      'The shared-machine tests run yonder as two unprivileged users and need root to do so. Run them as root (scripts/test-all.sh does).',
    );
  }
  if (spawnSync('runuser', ['--help'], { stdio: 'ignore' }).error) {
    throw new Error('runuser (util-linux) is missing: apt-get install util-linux');
  }
  if (lookUp(VICTIM) === null || lookUp(ATTACKER) === null) {
    execFileSync('bash', [USERS_SCRIPT], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const victim = lookUp(VICTIM);
  const attacker = lookUp(ATTACKER);
  if (!victim || !attacker) {
    throw new Error(`The users ${VICTIM} and ${ATTACKER} are missing: bash ${USERS_SCRIPT}`);
  }
  const node = spawnSync('runuser', ['-u', VICTIM, '--', process.execPath, '--version'], {
    encoding: 'utf8',
  });
  if (node.status !== 0) {
    throw new Error(
      `${VICTIM} cannot run ${process.execPath} (${node.stderr.trim()}): node must be installed where every user can reach it.`,
    );
  }
  return { victim, attacker };
}

/** A fresh private directory (0700) of `user` in their home, removed by `cleanupUsers`. */
export function userScratch(user: TestUser, prefix: string): string {
  const dir = mkdtempSync(join(user.home, `yonder-${prefix}-`));
  chownSync(dir, user.uid, user.gid);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Register a cleanup for `cleanupUsers` (last first). */
export function onCleanup(action: () => void): void {
  cleanups.push(action);
}

/** Run every cleanup registered; never throws. */
export function cleanupUsers(): void {
  while (cleanups.length > 0) {
    try {
      cleanups.pop()?.();
    } catch {
      /* best effort */
    }
  }
}

/** Run a program as `user` (for the attacker's moves), failing the test when it fails. */
export function asUser(user: TestUser, argv: readonly string[], cwd?: string): string {
  const result = spawnSync('runuser', ['-u', user.name, '--', ...argv], {
    encoding: 'utf8',
    cwd: cwd ?? user.home,
  });
  if (result.status !== 0) {
    throw new Error(
      `as ${user.name}: ${argv.join(' ')} exited ${result.status}: ${result.stderr.trim()}`,
    );
  }
  return result.stdout;
}

export interface RunOptions {
  /** Set in the otherwise empty environment (HOME, PATH, USER, LOGNAME, NO_COLOR are set). */
  env?: Record<string, string>;
  /** The working directory; the user's home by default. */
  cwd?: string;
  timeoutMs?: number;
  input?: string;
}

/**
 * Run `argv` as `user` (through runuser), collecting its output; killed with its whole process
 * group after `timeoutMs` (default 60 s).
 */
export function runProgramAs(
  user: TestUser,
  argv: readonly string[],
  options: Omit<RunOptions, 'env'> = {},
): Promise<UserResult> {
  // Its own process group, so that a time limit stops runuser and what it runs both.
  const child = spawn('runuser', ['-u', user.name, '--', ...argv], {
    cwd: options.cwd ?? user.home,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdin.end(options.input ?? '');
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, options.timeoutMs ?? 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Run `node BIN ARGS` as `user` with a clean environment (`env -i`): nothing of the test
 * process's environment reaches it but what `options.env` sets.
 */
export function runAs(
  user: TestUser,
  bin: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<UserResult> {
  const env = {
    HOME: user.home,
    PATH: SYSTEM_PATH,
    USER: user.name,
    LOGNAME: user.name,
    NO_COLOR: '1',
    LANG: 'C.UTF-8',
    ...options.env,
  };
  const assignments = Object.entries(env).map(([name, value]) => `${name}=${value}`);
  const { env: _env, ...rest } = options;
  return runProgramAs(user, ['env', '-i', ...assignments, process.execPath, bin, ...args], rest);
}

/** The one JSON document a `--json` run printed, or an error quoting what it printed. */
// biome-ignore lint/suspicious/noExplicitAny: a CLI answer, checked field by field by the tests
export function jsonOf(result: UserResult): any {
  try {
    return JSON.parse(result.stdout);
  } catch {
    throw new Error(
      `Expected one JSON document (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}
