/** Programs, and the CLI, run as one of the test users with a clean environment (`env -i`), collected to their end. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CLI_BIN, type CliResult, collectProcess, type Raw } from './run-cli.js';
import type { TestUser } from './test-users.js';

/** A PATH every user can use (the test process's own may hold root's directories). */
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface RunAsOptions {
  /** Set in the otherwise empty environment (HOME, PATH, USER, LOGNAME, NO_COLOR, LANG are set). */
  env?: Record<string, string>;
  /** The working directory; the user's home by default. */
  cwd?: string;
  /** Killed with its whole process group after this long; 60 s by default. */
  timeoutMs?: number;
  /** Written to its stdin, which is then closed. */
  input?: string;
}

/** Run `argv` as `user` (through runuser) in its own process group, collecting its output. */
export async function runProgramAs(
  user: TestUser,
  argv: readonly string[],
  options: Omit<RunAsOptions, 'env'> = {},
): Promise<CliResult> {
  const started = Date.now();
  // Its own process group, so that a time limit stops runuser and what it runs both.
  const child = spawn('runuser', ['-u', user.name, '--', ...argv], {
    cwd: options.cwd ?? user.home,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdin.end(options.input ?? '');
  const timer = setTimeout(() => {
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }, options.timeoutMs ?? 60_000);
  try {
    return await collectProcess(child, started);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Run `node BIN ARGS` as `user` with a clean environment: nothing of the test process's
 * environment reaches it but what `options.env` sets.
 */
export function runAs(
  user: TestUser,
  bin: string,
  args: readonly string[],
  options: RunAsOptions = {},
): Promise<CliResult> {
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
export function jsonOf(result: CliResult): Raw {
  try {
    return JSON.parse(result.stdout);
  } catch {
    throw new Error(
      `Expected one JSON document (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}

/** `yonder ARGS` (the checkout's built CLI) as `user` on the ledger `state`, with `env` besides. */
export function yonderAs(
  user: TestUser,
  state: string,
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<CliResult> {
  return runAs(user, CLI_BIN, args, {
    env: { YONDER_STATE_DIR: state, XDG_CONFIG_HOME: join(state, '.no-config'), ...env },
    timeoutMs,
  });
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
