/**
 * One framed command through a child process that reaches a shell somewhere else (`ssh`,
 * `podman exec`, `kubectl exec`…): spawned, fed the invocation on stdin, read after its marks
 * with backpressure, held to its time limit and to the caller's abort. How it ended is judged
 * by the transport (`framedResult` is the plain judgment), since only it knows what its
 * program's own failures look like.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { YonderError } from '../errors/yonder-error.js';
import type { RunResultV1 } from '../spec/transport/v1/transport-v1.js';
import { readChildStdout } from './child-stdout-reader.js';
import {
  DEFAULT_TIMEOUT_MS,
  feedInput,
  NOT_FOUND_MARK,
  RemoteAnswer,
  type RemoteInvocation,
} from './remote-invocation.js';

/** The child that carries one invocation. */
export interface FramedChildSpec {
  /** The program run on this machine (`ssh`, `podman`…). */
  readonly program: string;
  /**
   * Its arguments. The far side must end up running `/bin/sh -s` on the child's stdin, directly
   * (`podman exec -i CONTAINER /bin/sh -s`) or through a login shell given
   * `invocation.command` (`ssh HOST 'exec /bin/sh -s'`).
   */
  readonly args: readonly string[];
  /** The child's environment; default: this process's. */
  readonly env?: NodeJS.ProcessEnv;
  /** The host as messages name it. */
  readonly target: string;
  /** Called once, when the far side's sh has started (its start mark arrived). */
  readonly onStarted?: () => void;
  /** Called with the child when it starts and again (`null`) when it is gone: for `close()`. */
  readonly track?: (child: ChildProcessWithoutNullStreams, running: boolean) => void;
}

/** How the child ended, for the transport to judge. */
export interface FramedEnd {
  readonly answer: RemoteAnswer;
  /** The child's own exit status and signal (not the command's: that is `answer.status`). */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Monotonic milliseconds from spawn to close. */
  readonly elapsedMs: number;
}

/** Beyond the command's own limit (which the far side enforces with `timeout`): this long for the answer to come back. */
const GRACE_MS = 2_000;

/**
 * Run one invocation through a child. Resolves with how the child ended, or with the error
 * that ended it here: the time limit passed (`E_TIMEOUT`), the caller aborted (`E_TRANSPORT`),
 * the program could not be started (`E_TRANSPORT`), or the caller's `onStdout` threw (that
 * error, as thrown).
 */
export function runFramedChild(
  spec: FramedChildSpec,
  invocation: RemoteInvocation,
): Promise<{ kind: 'ended'; end: FramedEnd } | { kind: 'failed'; error: YonderError }> {
  const options = invocation.options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = performance.now();
  const child = spawn(spec.program, [...spec.args], {
    env: spec.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  spec.track?.(child, true);
  const answer = new RemoteAnswer(invocation);
  return new Promise((resolvePromise) => {
    let settled = false;
    let killer: NodeJS.Timeout | undefined;
    const stop = (): void => {
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), 2_000);
      killer.unref();
    };
    const finish = (outcome: Parameters<typeof resolvePromise>[0]): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolvePromise(outcome);
    };
    const timer = setTimeout(() => {
      stop();
      finish({ kind: 'failed', error: timedOut(timeoutMs, spec.target) });
    }, timeoutMs + GRACE_MS);
    const onAbort = (): void => {
      stop();
      finish({
        kind: 'failed',
        error: new YonderError('E_TRANSPORT', `Command aborted on ${spec.target}.`),
      });
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const take = (chunk: Buffer): Promise<void> | undefined => {
      const before = answer.started;
      const busy = answer.pushStdout(chunk);
      if (!before && answer.started) spec.onStarted?.();
      if (!answer.failed) return busy;
      stop();
      return undefined;
    };
    // Streamed (onStdout, bytes): read into one buffer of ours, no more until the caller has
    // taken it. Kept output (no sink) must own its bytes, so it is read as Node reads it.
    const streamed = options.onStdout !== undefined && options.encoding === 'buffer';
    if (!(streamed && readChildStdout(child.stdout, take)))
      child.stdout.on('data', (chunk: Buffer) => {
        const busy = take(chunk);
        if (busy) {
          child.stdout.pause();
          busy.then(() => child.stdout.resume());
        }
      });
    child.stderr.on('data', (chunk: Buffer) => answer.pushStderr(chunk));
    // The child gone before reading all of stdin (it could not reach the far side): its
    // exit status says so, nothing to report here.
    child.stdin.on('error', () => {});
    child.on('error', (error) =>
      finish({
        kind: 'failed',
        error: new YonderError(
          'E_TRANSPORT',
          `Cannot run ${spec.program} for ${spec.target}: ${error.message}`,
          { cause: error },
        ),
      }),
    );
    child.on('close', (code, signal) => {
      spec.track?.(child, false);
      clearTimeout(killer);
      // What came is written before the result (with onStdout); a sink that failed fails it.
      answer.delivered().then(
        () =>
          finish({
            kind: 'ended',
            end: { answer, code, signal, elapsedMs: performance.now() - started },
          }),
        // The sink's own error, as it threw it (the caller knows it by identity).
        (error: unknown) => finish({ kind: 'failed', error: error as YonderError }),
      );
    });
    void feedInput(
      answer,
      invocation,
      (chunk) => child.stdin.write(chunk),
      () => child.stdin.end(),
    );
  });
}

/** The error of a command that ran past its time limit on `target`. */
export function timedOut(timeoutMs: number, target: string): YonderError {
  return new YonderError(
    'E_TIMEOUT',
    `Command timed out after ${Math.round(timeoutMs / 100) / 10}s on ${target}.`,
  );
}

/** The last `count` non-empty lines of what a program said, for messages, without lines `noise` matches. */
export function lastLines(text: string, count = 3, noise?: RegExp): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !noise?.test(line))
    .slice(-count)
    .join(' / ');
}

/**
 * How the far side's `timeout` reports a command it stopped: 124 from coreutils; from busybox
 * (containers, small systems), the status of the signal it sent, TERM (143), or KILL (137) once
 * `-k` ran out. Taken as the time limit only when the command ran at least that long.
 */
export const TIMEOUT_STATUSES: ReadonlySet<number> = new Set([124, 137, 143]);

/**
 * The plain judgment of how a framed child ended, for a transport whose program has no failures
 * of its own to tell apart: sh never started (what the program said instead), the connection
 * lost mid-command, the time limit, a program not found there, else the command's result.
 * @throws YonderError `E_TRANSPORT`, `E_TIMEOUT` or `E_COMMAND_NOT_FOUND`.
 */
export function framedResult(
  end: FramedEnd,
  invocation: RemoteInvocation,
  target: string,
  program: string,
): RunResultV1 {
  const { answer, code, signal } = end;
  if (!answer.started) {
    throw new YonderError(
      'E_TRANSPORT',
      `${program} could not start /bin/sh on ${target} (exit status ${code ?? signal}): ${lastLines(answer.preamble()) || 'it printed nothing'}`,
    );
  }
  const status = answer.status;
  if (status === null) {
    throw new YonderError(
      'E_TRANSPORT',
      `The connection to ${target} was lost while a command ran (${lastLines(answer.result().stderr, 2) || `${program} exit status ${code ?? signal}`}).`,
    );
  }
  const timeoutMs = invocation.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (TIMEOUT_STATUSES.has(status) && end.elapsedMs >= timeoutMs) throw timedOut(timeoutMs, target);
  const result = answer.result();
  const argv0 = invocation.argv0;
  if (status === 127 && result.stderr.startsWith(NOT_FOUND_MARK))
    throw new YonderError('E_COMMAND_NOT_FOUND', `${argv0} was not found on ${target}.`);
  return {
    exitCode: status,
    signal: null,
    ...result,
    durationMs: Math.round(end.elapsedMs),
  };
}
