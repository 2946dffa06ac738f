/**
 * The one runner of the built `yonder` CLI for tests: a separate process, as a user runs it,
 * with its own ledger and none of the user's config, agent, profile or colour.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPOSITORY_ROOT } from './repository.js';

/** The built CLI (`pnpm build` makes it). */
export const CLI_BIN = join(REPOSITORY_ROOT, 'packages/cli/dist/bin.js');

/** A JSON document read raw (a CLI answer, a record from disk) whose shape the test checks. */
// biome-ignore lint/suspicious/noExplicitAny: raw JSON under test, checked field by field
export type Raw = any;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to close. */
  ms: number;
}

export interface CliOptions {
  /** The ledger (`YONDER_STATE_DIR`), and the working directory unless `cwd` says otherwise. */
  state: string;
  cwd?: string;
  /** Set on top of the isolated environment (so they may set `YONDER_CONFIG`, …). */
  env?: Record<string, string>;
  /** Killed with SIGKILL after this long; default 60 s. */
  timeoutMs?: number;
  /** Written to stdin (closed after); without it stdin is /dev/null. */
  input?: string;
  /** Another `yonder` executable (an installed one) instead of `node CLI_BIN`. */
  bin?: string;
}

/** Fail (never skip) when the CLI has not been built. */
export function requireCliBuild(): void {
  if (!existsSync(CLI_BIN))
    throw new Error(`The CLI is not built (${CLI_BIN} is missing). Build it with: pnpm build`);
}

/**
 * The environment of every CLI run: this one, without the user's config, debug switch,
 * default profile, ssh agent or colour, with `state` as the ledger; then `extra` on top.
 */
export function cliEnv(state: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.YONDER_CONFIG;
  delete env.YONDER_DEBUG;
  delete env.YONDER_STORE;
  return {
    ...env,
    YONDER_STATE_DIR: state,
    YONDER_PROFILE: '',
    NO_COLOR: '1',
    SSH_AUTH_SOCK: '',
    XDG_CONFIG_HOME: join(state, '.no-config'),
    ...extra,
  };
}

/** Start `yonder ARGS` (to kill it, or to read it as it runs); `collectProcess` waits for it. */
export function spawnCli(args: readonly string[], options: CliOptions): ChildProcess {
  const [program, argv] =
    options.bin === undefined ? [process.execPath, [CLI_BIN, ...args]] : [options.bin, [...args]];
  return spawn(program, argv, {
    cwd: options.cwd ?? options.state,
    env: cliEnv(options.state, options.env),
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
}

/** Collect a started process's output and exit (a CLI run, or any other command). */
export function collectProcess(child: ChildProcess, started = Date.now()): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started }),
    );
  });
}

/** Run `yonder ARGS` to its end (killed after `timeoutMs`, default 60 s). */
export async function runCli(args: readonly string[], options: CliOptions): Promise<CliResult> {
  const started = Date.now();
  const child = spawnCli(args, options);
  if (options.input !== undefined) child.stdin?.end(options.input);
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  try {
    return await collectProcess(child, started);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Run `yonder ARGS --json` (`--json` goes before any `--`) and parse what it printed, which
 * must be exactly one JSON document on one line.
 */
export async function runCliJson(
  args: readonly string[],
  options: CliOptions,
): Promise<CliResult & { doc: Raw }> {
  const split = args.indexOf('--');
  const withJson =
    split < 0 ? [...args, '--json'] : [...args.slice(0, split), '--json', ...args.slice(split)];
  const result = await runCli(withJson, options);
  let doc: Raw;
  try {
    if (!/^[^\n]+\n$/.test(result.stdout)) throw new Error('not one line');
    doc = JSON.parse(result.stdout);
  } catch {
    throw new Error(
      `yonder ${withJson.join(' ')} printed no single JSON line (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
  return { ...result, doc };
}
