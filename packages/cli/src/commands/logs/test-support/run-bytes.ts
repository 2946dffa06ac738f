/** Test support for `yonder logs`: the CLI run with its output kept as bytes, and shell pipelines run as a user types them. */
import { type spawn, spawnSync } from 'node:child_process';
import { type CliOptions, cliEnv, spawnCli } from '@yonder/test-helpers';

export interface BytesResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

/** Collect a started process's output, stdout as bytes. */
export function collectBytes(child: ReturnType<typeof spawn>): Promise<BytesResult> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout: Buffer.concat(out), stderr }),
    );
  });
}

/** Run `yonder ARGS`, stdout kept as bytes (killed after `timeoutMs`, default 120 s). */
export async function runBytes(args: readonly string[], options: CliOptions): Promise<BytesResult> {
  const child = spawnCli(args, options);
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  try {
    return await collectBytes(child);
  } finally {
    clearTimeout(timer);
  }
}

/** Run a shell pipeline as a user would type it, with the CLI's environment. */
export function shell(
  script: string,
  options: CliOptions,
): { status: number | null; stdout: Buffer; stderr: string } {
  const result = spawnSync('bash', ['-c', script], {
    cwd: options.cwd ?? options.state,
    env: cliEnv(options.state, options.env),
    timeout: options.timeoutMs ?? 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.toString() };
}
