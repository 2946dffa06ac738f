import { spawn } from 'node:child_process';

/** The built CLI. Tests run it as a user would: a separate process. */
export const BIN = new URL('../../dist/bin.js', import.meta.url).pathname;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `yonder ARGS` with the given environment on top of this one (colour off, no default profile). */
export function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  cwd?: string,
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      ...(cwd ? { cwd } : {}),
      env: { ...process.env, NO_COLOR: '1', YONDER_PROFILE: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
