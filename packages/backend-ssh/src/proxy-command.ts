/** A ProxyCommand as ssh runs it: its `%` tokens expanded, started through the user's shell with `exec`, and its stdin/stdout made the socket the SSH connection runs over. */
import { type ChildProcess, spawn } from 'node:child_process';
import { Duplex } from 'node:stream';
import { YonderError } from '@yonder/core';
import { withFixedSearchPath } from '@yonder/core/backend-kit';
import type { ResolvedHost } from './ssh-config.js';

/** Characters ssh (≥ 9.6) refuses in a user or host name that reaches a shell, and whitespace. */
const SHELL_UNSAFE = /[\s'"`$\\;&<>|(){}*?[\]!#~]|^-/;

/**
 * The ProxyCommand of a host with `%h %k %n %p %r %%` expanded, as ssh's expand_proxy_command
 * does (`exec ` in front). The values substituted come from the profile and the config; one that
 * a shell would read as code is refused rather than quoted, as ssh ≥ 9.6 does.
 * @throws YonderError `E_INVALID_PROFILE` for an unknown token or an unsafe value.
 */
export function expandProxyCommand(host: ResolvedHost): string {
  const command = host.proxyCommand ?? '';
  const tokens: Record<string, string> = {
    '%': '%',
    h: host.hostname,
    k: host.hostKeyAlias ?? host.alias,
    n: host.alias,
    p: String(host.port),
    r: host.user,
  };
  const expanded = command.replace(/%(.?)/g, (_, token: string) => {
    const value = tokens[token];
    if (value === undefined)
      throw new YonderError(
        'E_INVALID_PROFILE',
        `ssh config: unknown token %${token} in the ProxyCommand of ${host.alias}: ${command}`,
      );
    if (token !== '%' && token !== 'p' && SHELL_UNSAFE.test(value))
      throw new YonderError(
        'E_INVALID_PROFILE',
        `The ProxyCommand of ${host.alias} would pass ${JSON.stringify(value)} (%${token}) to a shell; refusing a value with shell characters.`,
      );
    return value;
  });
  return `exec ${expanded}`;
}

/** A started ProxyCommand: the stream to run SSH over, and what it said on stderr. */
export interface ProxyProcess {
  socket: Duplex;
  child: ChildProcess;
  /** The last of its stderr (for the error when the connection fails). */
  stderr(): string;
  /** Whether it has exited, and how. */
  exit(): string | null;
  /** Resolves once it has exited and its stderr is read (or after `ms`, if it is still running). */
  settled(ms: number): Promise<void>;
}

/**
 * Start a host's ProxyCommand the way ssh does: `$SHELL -c "exec COMMAND"` (/bin/sh when
 * $SHELL is unset or not an absolute path), its stdin and stdout the connection, its stderr
 * kept (the last 4 KiB) for messages. Its environment is this process's with `given` laid over
 * it, its PATH of fixed directories only.
 */
export function startProxyCommand(host: ResolvedHost, given: NodeJS.ProcessEnv): ProxyProcess {
  const command = expandProxyCommand(host);
  const env = withFixedSearchPath({ ...process.env, ...given });
  // ssh execs $SHELL by its path; withFixedSearchPath has dropped a relative one.
  const shell = env.SHELL || '/bin/sh';
  const child = spawn(shell, ['-c', command], { stdio: ['pipe', 'pipe', 'pipe'], env });
  let stderr = '';
  let exited: string | null = null;
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4096);
  });
  child.on('exit', (code, signal) => {
    exited = signal ? `killed by ${signal}` : `exited with ${code}`;
  });
  const closed = new Promise<void>((resolvePromise) => child.on('close', () => resolvePromise()));
  const socket = Duplex.from({ readable: child.stdout, writable: child.stdin });
  // A child that cannot be started, or a pipe that breaks, ends the connection (ssh2 reports it).
  child.on('error', (error) => socket.destroy(error));
  child.stdin?.on('error', () => {});
  socket.on('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  return {
    socket,
    child,
    stderr: () => stderr.trim(),
    exit: () => exited,
    settled: (ms) =>
      Promise.race([
        closed,
        new Promise<void>((resolvePromise) => setTimeout(resolvePromise, ms).unref()),
      ]),
  };
}
