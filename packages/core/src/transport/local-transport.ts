/** The `local` transport: programs on this machine from argv, time-limited, output bounded, start failures as errors. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { YonderError } from '../errors/yonder-error.js';
import type { RunOptionsV1, RunResultV1, TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { withFixedSearchPath } from '../trust/search-path.js';

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024;

/** Keeps the first `limit` bytes (stdout: what parsers need) or the last (stderr: where errors are). */
export class BoundedBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(
    private readonly limit: number,
    private readonly keep: 'head' | 'tail',
  ) {}
  push(chunk: Buffer): void {
    if (this.keep === 'head') {
      if (this.size >= this.limit) {
        this.truncated = true;
        return;
      }
      const room = this.limit - this.size;
      if (chunk.length > room) {
        this.truncated = true;
        chunk = chunk.subarray(0, room);
      }
      this.chunks.push(chunk);
      this.size += chunk.length;
      return;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.limit && this.chunks.length > 0) {
      this.truncated = true;
      const first = this.chunks[0] as Buffer;
      const excess = this.size - this.limit;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
  }
  text(): string {
    return this.bytes().toString('utf8');
  }
  /** What was kept, as the bytes received. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}

/**
 * Build a child environment: the parent's, minus what is unset, plus what is set, with a PATH
 * of fixed directories only and no relative SHELL (withFixedSearchPath: never the working
 * directory's programs).
 */
export function buildEnvironment(
  options: RunOptionsV1,
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const name of Object.keys(env)) {
    if (options.unsetEnvPrefixes?.some((prefix) => name.startsWith(prefix))) delete env[name];
  }
  for (const name of options.unsetEnv ?? []) delete env[name];
  Object.assign(env, options.env ?? {});
  return withFixedSearchPath(env);
}

/**
 * Run one program on this machine: argv only, never a shell. Time-limited (the whole
 * process group is killed), output bounded and decoded as UTF-8 with replacement (or stdout
 * returned as raw bytes, `encoding: 'buffer'`).
 * @throws YonderError `E_COMMAND_NOT_FOUND`, `E_TIMEOUT` or `E_TRANSPORT`.
 */
export function runLocal(
  argv: readonly string[],
  options: RunOptionsV1 = {},
): Promise<RunResultV1> {
  const [program, ...args] = argv;
  if (!program) return Promise.reject(new YonderError('E_TRANSPORT', 'No program given to run.'));
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const started = performance.now();
  if (options.signal?.aborted) {
    return Promise.reject(
      new YonderError('E_TRANSPORT', `Command aborted before it started: ${program}`, {
        cause: options.signal.reason,
      }),
    );
  }
  if (options.cwd !== undefined && !existsSync(options.cwd)) {
    return Promise.reject(
      new YonderError(
        'E_TRANSPORT',
        `Cannot run "${program}": the directory ${options.cwd} does not exist.`,
      ),
    );
  }
  const env = buildEnvironment(options);
  return new Promise((resolvePromise, rejectPromise) => {
    let settled = false;
    const stdout = new BoundedBuffer(limit, 'head');
    const stderr = new BoundedBuffer(limit, 'tail');
    let timedOut = false;
    let child: ChildProcess;
    try {
      child = spawn(program, args, {
        cwd: options.cwd,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        shell: false,
        windowsHide: true,
      });
    } catch (error) {
      // Node throws (rather than emitting) for some failures, e.g. E2BIG or a bad argument.
      rejectPromise(startError(program, error, env.PATH));
      return;
    }
    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    const onAbort = (): void => killGroup();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (action: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      action();
    };
    // First, before anything else can throw: a failed fork (EAGAIN), a missing program
    // (ENOENT) or no file descriptors left (EMFILE, then without stdio streams) arrive as an
    // 'error' event, and one without a listener would end the whole process.
    child.on('error', (error: NodeJS.ErrnoException) => {
      finish(() => rejectPromise(startError(program, error, env.PATH)));
    });
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdin?.on('error', () => {
      /* the program did not read its input: not an error of ours */
    });
    child.on('close', (exitCode, signal) => {
      finish(() => {
        if (timedOut) {
          rejectPromise(
            new YonderError(
              'E_TIMEOUT',
              `Command timed out after ${Math.round(timeoutMs / 100) / 10}s: ${program}`,
            ),
          );
          return;
        }
        if (options.signal?.aborted) {
          rejectPromise(
            new YonderError('E_TRANSPORT', `Command aborted: ${program}`, {
              cause: options.signal.reason,
            }),
          );
          return;
        }
        const bytes = options.encoding === 'buffer';
        resolvePromise({
          exitCode,
          signal,
          stdout: bytes ? '' : stdout.text(),
          ...(bytes ? { stdoutBytes: stdout.bytes() } : {}),
          stderr: stderr.text(),
          stdoutTruncated: stdout.truncated,
          stderrTruncated: stderr.truncated,
          durationMs: Math.round(performance.now() - started),
        });
      });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

const START_HINTS: Record<string, string> = {
  EAGAIN:
    'the system would not make another process (too many processes for this user, ulimit -u, or too little memory); try again later',
  ENOMEM: 'there is not enough memory to start it',
  EMFILE: 'this process has too many files open (ulimit -n)',
  ENFILE: 'the system has too many files open',
  EACCES: 'permission denied: is it executable?',
  E2BIG: 'its arguments and environment are too long',
};

/** A program that could not be started, as an error of the command (never an unhandled event). */
function startError(program: string, error: unknown, path = ''): YonderError {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  if (code === 'ENOENT') {
    return new YonderError(
      'E_COMMAND_NOT_FOUND',
      `Command not found: "${program}". Install it, or put it on PATH (searched: ${path}; relative entries of PATH are never searched).`,
      { cause: error },
    );
  }
  const hint = START_HINTS[code];
  return new YonderError(
    'E_TRANSPORT',
    `Could not start "${program}": ${(error as Error).message}${hint ? ` (${hint})` : ''}.`,
    { cause: error },
  );
}

/** The transport to this machine. */
export function createLocalTransport(): TransportV1 {
  return {
    specificationVersion: 'v1',
    id: 'local',
    target: 'local',
    run: (argv, options) => runLocal(argv, options),
    runScript: (script, args, options) =>
      runLocal(['sh', '-c', script, 'yonder-script', ...args], options),
    close: async () => {},
  };
}
