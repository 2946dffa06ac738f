/** Opening the SSH connections of a route with ssh2: the first hop by TCP or its ProxyCommand, each next one through a channel of the one before, every hop's host key checked and its login done with keys and agent; whatever fails closes every socket at once. */
import { createConnection, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { YonderError } from '@yonder/core';
import ssh2, { type ClientChannel, type ConnectConfig } from 'ssh2';
import { createHostVerifier } from './host-key-verifier.js';
import { type ProxyProcess, startProxyCommand } from './proxy-command.js';
import {
  type AuthenticationLog,
  authenticationFailure,
  createAuthHandler,
  readIdentities,
} from './ssh-authentication.js';
import type { ResolvedHost } from './ssh-config.js';

const { Client } = ssh2;
type Client = InstanceType<typeof Client>;

/** How a hop is named in messages: `user@host:port (alias)`. */
export function describeHost(host: ResolvedHost): string {
  return `${host.user}@${host.hostname}:${host.port}${host.alias !== host.hostname ? ` (${host.alias})` : ''}`;
}

/** What the connections of a route hold open, to be closed together. */
export interface OpenRoute {
  clients: Client[];
  final: Client;
  /** Sockets and ProxyCommands, destroyed when the route closes. */
  close(): void;
}

function tcp(host: ResolvedHost): Promise<Socket> {
  return new Promise((resolvePromise, rejectPromise) => {
    const socket = createConnection({ host: host.hostname, port: host.port });
    // SSH sends many small packets: with Nagle and delayed ACKs each command would wait twice.
    socket.setNoDelay(true);
    const timer = setTimeout(
      () => {
        socket.destroy();
        rejectPromise(
          new YonderError('E_TRANSPORT', `Cannot connect to ${describeHost(host)}: timed out.`),
        );
      },
      (host.connectTimeoutSeconds ?? 20) * 1000,
    );
    socket.once('connect', () => {
      clearTimeout(timer);
      resolvePromise(socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      rejectPromise(
        new YonderError(
          'E_TRANSPORT',
          `Cannot connect to ${describeHost(host)}: ${error.message}`,
          { cause: error },
        ),
      );
    });
  });
}

function forward(from: Client, host: ResolvedHost): Promise<ClientChannel> {
  return new Promise((resolvePromise, rejectPromise) => {
    from.forwardOut('127.0.0.1', 0, host.hostname, host.port, (error, stream) => {
      if (error)
        rejectPromise(
          new YonderError(
            'E_TRANSPORT',
            `The jump host could not reach ${describeHost(host)}: ${error.message}`,
            { cause: error },
          ),
        );
      else resolvePromise(stream);
    });
  });
}

/** One SSH login over a socket already open to the host. */
function login(
  host: ResolvedHost,
  sock: Duplex,
  options: { acceptNewHostKeys: boolean; proxy: ProxyProcess | null },
  clients: Client[],
): Promise<Client> {
  const label = describeHost(host);
  const identities = readIdentities(host);
  const verifier = createHostVerifier(host, { acceptNew: options.acceptNewHostKeys, label });
  const log: AuthenticationLog = { methodsLeft: null, partialSuccess: false };
  const client = new Client();
  // Always listening: an error between 'ready' and the connection's own listeners (a cut just as
  // authentication completes) would otherwise be thrown as uncaught; 'close' tells the rest.
  client.on('error', () => {});
  clients.push(client);
  const config: ConnectConfig = {
    host: host.hostname,
    port: host.port,
    username: host.user,
    readyTimeout: (host.connectTimeoutSeconds ?? 20) * 1000,
    keepaliveInterval: (host.serverAliveIntervalSeconds || 15) * 1000,
    keepaliveCountMax: host.serverAliveCountMax || 3,
    authHandler: createAuthHandler(host, identities, log),
    sock: sock as ConnectConfig['sock'],
    ...(verifier.serverHostKey.length > 0
      ? { algorithms: { serverHostKey: verifier.serverHostKey as never } }
      : {}),
    hostVerifier: (key: Buffer) => verifier.verify(key),
  };
  return new Promise<Client>((resolvePromise, rejectPromise) => {
    const onError = async (error: Error & { level?: string }): Promise<void> => {
      cleanup();
      const proxy = options.proxy;
      // What a failed ProxyCommand said comes with its exit, a moment after its stdout closed.
      if (proxy && error.level !== 'client-authentication') await proxy.settled(2_000);
      const proxySaid =
        proxy && (proxy.exit() || proxy.stderr())
          ? ` (the ProxyCommand ${[proxy.exit(), proxy.stderr()].filter(Boolean).join(': ')})`
          : '';
      const reason =
        verifier.refusal() ??
        (error.level === 'client-authentication'
          ? authenticationFailure(label, identities, log)
          : `Cannot connect to ${label}: ${error.message}${proxySaid}`);
      // Close at once: a server waits LoginGraceTime for a client that just stops talking.
      client.end();
      sock.destroy();
      rejectPromise(new YonderError('E_TRANSPORT', reason, { cause: error }));
    };
    const onReady = (): void => {
      cleanup();
      resolvePromise(client);
    };
    const cleanup = (): void => {
      client.removeListener('error', onErrorEvent);
      client.removeListener('ready', onReady);
    };
    const onErrorEvent = (error: Error): void => void onError(error);
    client.on('error', onErrorEvent);
    client.on('ready', onReady);
    try {
      client.connect(config);
    } catch (error) {
      void onError(error as Error);
    }
  });
}

/** Fail before any socket is opened when a hop cannot be used at all by ssh2. */
function checkUsable(host: ResolvedHost): void {
  if (host.refusals.length > 0)
    throw new YonderError(
      'E_TRANSPORT',
      `Cannot reach ${describeHost(host)}: ${host.refusals.join(' ')}`,
    );
  const identities = readIdentities(host);
  if (identities.keys.length === 0 && !identities.agent)
    throw new YonderError(
      'E_TRANSPORT',
      `No way to authenticate to ${describeHost(host)}: ${
        identities.problems.length > 0
          ? identities.problems.join('; ')
          : host.pubkeyAuthentication
            ? 'no identity file exists and no ssh-agent is available (SSH_AUTH_SOCK)'
            : 'PubkeyAuthentication is no, and the ssh2 transport logs in with keys only (use --transport openssh)'
      }${identities.certificates.length > 0 ? `; the certificates ${identities.certificates.join(', ')} need --transport openssh` : ''}.`,
    );
}

/**
 * Open every hop of a route, first to last. On failure every socket, channel and ProxyCommand
 * opened so far is closed before the error is thrown.
 * @throws YonderError `E_TRANSPORT` naming the hop and why (host key, authentication, network).
 */
export async function openRoute(
  route: readonly ResolvedHost[],
  options: { acceptNewHostKeys: boolean; env: NodeJS.ProcessEnv },
): Promise<OpenRoute> {
  for (const host of route) checkUsable(host);
  const clients: Client[] = [];
  const sockets: Duplex[] = [];
  const proxies: ProxyProcess[] = [];
  const close = (): void => {
    for (const client of clients) client.end();
    for (const socket of sockets) socket.destroy();
    for (const proxy of proxies)
      if (proxy.child.exitCode === null && proxy.child.signalCode === null)
        proxy.child.kill('SIGTERM');
  };
  try {
    let previous: Client | null = null;
    for (const host of route) {
      let sock: Duplex;
      let proxy: ProxyProcess | null = null;
      if (previous) sock = await forward(previous, host);
      else if (host.proxyCommand) {
        proxy = startProxyCommand(host, options.env);
        proxies.push(proxy);
        sock = proxy.socket;
      } else sock = await tcp(host);
      sockets.push(sock);
      previous = await login(
        host,
        sock,
        { acceptNewHostKeys: options.acceptNewHostKeys, proxy },
        clients,
      );
    }
    return { clients, final: previous as Client, close };
  } catch (error) {
    close();
    throw error;
  }
}
