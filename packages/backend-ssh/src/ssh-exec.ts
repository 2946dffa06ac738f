/** One command over an open SSH connection (ssh2): the invocation every login shell passes unchanged, and its exec with time limit, abort and bounded output. */
import { getErrorMessage, type RunOptionsV1, type RunResultV1, YonderError } from '@yonder/core';
import {
  DEFAULT_MAX_OUTPUT,
  DEFAULT_TIMEOUT_MS,
  feedInput,
  NOT_FOUND_MARK,
  RemoteAnswer,
  type RemoteInvocation,
  remoteInvocation,
} from '@yonder/core/transport-kit';
import type ssh2 from 'ssh2';
import type { ClientChannel } from 'ssh2';
import { passedThrough } from './young-garbage.js';

type Client = InstanceType<typeof ssh2.Client>;

export { DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT_MS, NOT_FOUND_MARK };
export const DEFAULT_MAX_CHANNELS = 8;

/** An open connection: its chain of clients (jump hosts first) and whether it has died. */
export interface Connection {
  clients: Client[];
  final: Client;
  closed: boolean;
  reason: string | null;
}

/** The channel for a command could not be opened (the command never started). */
export class ChannelNotOpened extends Error {
  constructor(cause: unknown) {
    super(getErrorMessage(cause), { cause });
  }
}

/** What `onStdout` threw: the command was stopped, and its caller gets that error as it was. */
export class StdoutSinkFailed extends Error {
  constructor(readonly error: unknown) {
    super(getErrorMessage(error), { cause: error });
  }
}

/** What is sent to the far side for one argv: `exec /bin/sh -s`, with the argv under the launcher on stdin. */
export function remoteCommandLine(
  argv: readonly string[],
  options: RunOptionsV1,
): RemoteInvocation {
  return remoteInvocation(argv, options);
}

/** Run one invocation on the connection. */
export async function execOnce(
  connection: Connection,
  invocation: RemoteInvocation,
  options: RunOptionsV1,
  target: string,
): Promise<RunResultV1> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = performance.now();
  const channel = await new Promise<ClientChannel>((resolvePromise, rejectPromise) => {
    // A connection killed while the channel was being opened may never answer the request:
    // bounded like the command, so the caller reconnects or fails instead of waiting forever.
    const unanswered = setTimeout(
      () => refuse(new Error(`no answer from ${target} to the request to start a command`)),
      timeoutMs + 2_000,
    );
    const refuse = (error: unknown): void => {
      clearTimeout(unanswered);
      rejectPromise(new ChannelNotOpened(error));
    };
    try {
      connection.final.exec(invocation.command, (error, stream) => {
        clearTimeout(unanswered);
        if (error) refuse(error);
        else resolvePromise(stream);
      });
    } catch (error) {
      refuse(error);
    }
  });
  return new Promise<RunResultV1>((resolvePromise, rejectPromise) => {
    const answer = new RemoteAnswer(invocation);
    let settled = false;
    const finish = (action: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      action();
    };
    const timer = setTimeout(() => {
      finish(() => {
        channel.close();
        rejectPromise(
          new YonderError(
            'E_TIMEOUT',
            `Command timed out after ${Math.round(timeoutMs / 100) / 10}s on ${target}.`,
          ),
        );
      });
    }, timeoutMs + 2_000);
    const onAbort = (): void =>
      finish(() => {
        channel.close();
        rejectPromise(new YonderError('E_TRANSPORT', `Command aborted on ${target}.`));
      });
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const stopped = (): void =>
      finish(() => {
        channel.close();
        answer.delivered().then(
          () => rejectPromise(new YonderError('E_TRANSPORT', `Command stopped on ${target}.`)),
          (error: unknown) => rejectPromise(new StdoutSinkFailed(error)),
        );
      });
    channel.on('data', (chunk: Buffer) => {
      passedThrough(chunk.length);
      const busy = answer.pushStdout(chunk);
      if (answer.failed) stopped();
      else if (busy) {
        // The caller is writing what came (onStdout): read no more until it has (the window
        // stays closed, so the far side waits), then go on.
        channel.pause();
        busy.then(() => (answer.failed ? stopped() : channel.resume()));
      }
    });
    channel.stderr.on('data', (chunk: Buffer) => answer.pushStderr(chunk));
    channel.on('close', (code: number | null | undefined, signal?: string) => {
      // What came is written before the result (with onStdout); a sink that failed fails it.
      answer.delivered().then(() => closed(code, signal), stopped);
    });
    const closed = (code: number | null | undefined, signal?: string): void => {
      finish(() => {
        if (code === undefined && !signal) {
          rejectPromise(
            new YonderError(
              'E_TRANSPORT',
              `The connection to ${target} was lost while a command ran (${connection.reason ?? 'no exit status'}).`,
            ),
          );
          return;
        }
        const status = answer.status ?? code ?? null;
        if (status === 124 && performance.now() - started >= timeoutMs) {
          rejectPromise(
            new YonderError(
              'E_TIMEOUT',
              `Command timed out after ${Math.round(timeoutMs / 100) / 10}s on ${target}.`,
            ),
          );
          return;
        }
        if (!answer.started) {
          rejectPromise(
            new YonderError(
              'E_TRANSPORT',
              `The shell on ${target} did not start /bin/sh (exit status ${code ?? signal}): ${answer.preamble() || 'it printed nothing'}`,
            ),
          );
          return;
        }
        resolvePromise({
          exitCode: status,
          signal: signal ?? null,
          ...answer.result(),
          durationMs: Math.round(performance.now() - started),
        });
      });
    };
    void feedInput(
      answer,
      invocation,
      (chunk) => channel.write(chunk),
      () => channel.end(),
    );
  });
}
