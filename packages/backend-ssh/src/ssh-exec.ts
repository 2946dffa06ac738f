/** One command over an open SSH connection: the launcher line that runs it on the far side, and its exec with time limit, abort and bounded output. */
import { getErrorMessage, type RunOptionsV1, type RunResultV1, YonderError } from '@yonder/core';
import { BoundedBuffer, shJoin } from '@yonder/core/backend-kit';
import ssh2, { type ClientChannel } from 'ssh2';

const { Client } = ssh2;
type Client = InstanceType<typeof Client>;

export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024;
export const DEFAULT_MAX_CHANNELS = 8;

/** The line the launcher prints, with exit 127, when the program to run does not exist there. */
export const NOT_FOUND_MARK = 'yonder-transport: no such program: ';

/**
 * Runs the real command on the far side under a time limit of its own (`timeout -k`), so a
 * command we gave up on does not live on holding a session slot. `$1` is the limit in
 * seconds, `$2` the variable-name prefixes to remove (space-separated), `$3` the program
 * (checked to exist, else NOT_FOUND_MARK and exit 127), the rest the command.
 */

const LAUNCHER = [
  't=$1; prefixes=$2; prog=$3; shift 3',
  'case $prog in',
  `  /*) [ -x "$prog" ] || { printf '${NOT_FOUND_MARK}%s\\n' "$prog" >&2; exit 127; } ;;`,
  // A relative path is looked up in the command's own working directory: not checked here.
  '  */*) ;;',
  `  *) command -v -- "$prog" >/dev/null 2>&1 || { printf '${NOT_FOUND_MARK}%s\\n' "$prog" >&2; exit 127; } ;;`,
  'esac',
  'if [ -n "$prefixes" ]; then',
  '  for v in $(env | sed -n "s/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p"); do',
  '    for p in $prefixes; do case $v in "$p"*) unset "$v" 2>/dev/null || true ;; esac; done',
  '  done',
  'fi',
  'if command -v timeout >/dev/null 2>&1; then exec timeout -k 5 "$t" "$@"; fi',
  'exec "$@"',
].join('\n');

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

/** The command line sent to the far side for one argv, under the launcher. */
export function remoteCommandLine(argv: readonly string[], options: RunOptionsV1): string {
  const seconds = Math.max(1, Math.ceil((options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000));
  const prefix: string[] = [];
  if (options.unsetEnv?.length || options.env) {
    prefix.push('env');
    for (const name of options.unsetEnv ?? []) prefix.push('-u', name);
    for (const [name, value] of Object.entries(options.env ?? {})) prefix.push(`${name}=${value}`);
  }
  const cwd = options.cwd
    ? ['sh', '-c', 'cd -- "$1" && shift && exec "$@"', 'yonder-cd', options.cwd]
    : [];
  return shJoin([
    'sh',
    '-c',
    LAUNCHER,
    'yonder',
    String(seconds),
    (options.unsetEnvPrefixes ?? []).join(' '),
    argv[0] as string,
    ...cwd,
    ...prefix,
    ...argv,
  ]);
}

/** Run one command line on the connection. */
export async function execOnce(
  connection: Connection,
  command: string,
  options: RunOptionsV1,
  target: string,
): Promise<RunResultV1> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const started = Date.now();
  const channel = await new Promise<ClientChannel>((resolvePromise, rejectPromise) => {
    const refuse = (error: unknown): void => rejectPromise(new ChannelNotOpened(error));
    try {
      connection.final.exec(command, (error, stream) =>
        error ? refuse(error) : resolvePromise(stream),
      );
    } catch (error) {
      refuse(error);
    }
  });
  return new Promise<RunResultV1>((resolvePromise, rejectPromise) => {
    const stdout = new BoundedBuffer(limit, 'head');
    const stderr = new BoundedBuffer(limit, 'tail');
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
    channel.on('data', (chunk: Buffer) => stdout.push(chunk));
    channel.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    channel.on('close', (code: number | null | undefined, signal?: string) => {
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
        if (code === 124 && Date.now() - started >= timeoutMs) {
          rejectPromise(
            new YonderError(
              'E_TIMEOUT',
              `Command timed out after ${Math.round(timeoutMs / 100) / 10}s on ${target}.`,
            ),
          );
          return;
        }
        const bytes = options.encoding === 'buffer';
        resolvePromise({
          exitCode: code ?? null,
          signal: signal ?? null,
          stdout: bytes ? '' : stdout.text(),
          ...(bytes ? { stdoutBytes: stdout.bytes() } : {}),
          stderr: stderr.text(),
          stdoutTruncated: stdout.truncated,
          stderrTruncated: stderr.truncated,
          durationMs: Date.now() - started,
        });
      });
    });
    if (options.input !== undefined) channel.end(options.input);
    else channel.end();
  });
}
