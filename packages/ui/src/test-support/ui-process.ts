/** Test support: `yonder ui` started as a user starts it (the built CLI, its own process), its address read from the first line of its output, and Chromium from Debian driven by playwright-core. */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPOSITORY_ROOT, requireCliBuild, spawnCli } from '@yonder/test-helpers';
import { type Browser, chromium } from 'playwright-core';
import CHROMIUM_ARGS from './chromium-args.json' with { type: 'json' };

/** The system browser the tests drive; nothing is downloaded. */
export const CHROMIUM = process.env.YONDER_CHROMIUM ?? '/usr/bin/chromium';

/** Where the browser tests keep their screenshots (gitignored). */
export const ARTIFACTS = join(REPOSITORY_ROOT, 'packages/ui/test-artifacts');

export interface UiProcess {
  readonly url: string;
  readonly origin: string;
  readonly port: number;
  readonly token: string;
  /** The address of `path` on this server, with the token (as the page's own links carry it). */
  address(path: string): string;
  readonly child: ChildProcess;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** Interrupt it as Ctrl-C does and wait for it to exit; resolves with its exit code. */
  stop(): Promise<number | null>;
}

/** Start `yonder ui --no-open` (on a free port unless `args` say otherwise) over the ledger `state`. */
export async function startUiProcess(
  state: string,
  env: Record<string, string> = {},
  args: readonly string[] = [],
): Promise<UiProcess> {
  requireCliBuild();
  if (!existsSync(join(REPOSITORY_ROOT, 'packages/ui/dist/client/app.js'))) {
    throw new Error(
      '@yonder/ui is not built (packages/ui/dist is missing). Build it with: pnpm build',
    );
  }
  const child = spawnCli(['ui', '--no-open', ...args], { state, env });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`yonder ui printed no address: ${stderr}`)),
      60_000,
    );
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      const newline = stdout.indexOf('\n');
      if (newline >= 0) {
        clearTimeout(timer);
        resolve(stdout.slice(0, newline));
      }
    });
    child.once('exit', (code) => reject(new Error(`yonder ui exited (${code}): ${stderr}`)));
  });
  const parsed = new URL(url);
  return {
    url,
    origin: parsed.origin,
    port: Number(parsed.port),
    token: parsed.searchParams.get('token') ?? '',
    address(path: string) {
      const address = new URL(path, parsed.origin);
      address.searchParams.set('token', parsed.searchParams.get('token') ?? '');
      return address.href;
    },
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

/**
 * Debian's Chromium, headless, kept off the network (no background requests, updates or
 * sync: `chromium-args.json`, shared with the benchmark). A missing browser fails the test with the command that installs it, never skips.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}. Install it with: apt-get install chromium (scripts/test-all.sh does, as root)`,
    );
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
}
