/** The ssh2 transport: one kept SSH connection per host (through ProxyJump hops), host keys checked against known_hosts, commands run under a channel bound with reconnect and backoff. */
import { readFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  getErrorMessage,
  type Profile,
  type RunOptionsV1,
  type RunResultV1,
  type TransportFactoryV1,
  type TransportV1,
  YonderError,
} from '@yonder/core';
import ssh2, { type AuthMethod, type ClientChannel, type ConnectConfig } from 'ssh2';

// ssh2 is CommonJS: under Node's ESM loader its exports are read from the default export.
const { Client, utils } = ssh2;
type Client = InstanceType<typeof Client>;

import {
  appendKnownHost,
  checkHostKey,
  fingerprint,
  type KnownHostEntry,
  loadKnownHosts,
} from './known-hosts.js';
import { type ResolvedHost, resolveHost, splitDestination } from './ssh-config.js';
import {
  ChannelNotOpened,
  type Connection,
  DEFAULT_MAX_CHANNELS,
  DEFAULT_TIMEOUT_MS,
  execOnce,
  NOT_FOUND_MARK,
  remoteCommandLine,
} from './ssh-exec.js';
import {
  type SshSettings,
  SshTransportOptionsSchema,
  sshSettings,
} from './ssh-transport-options.js';

export interface SshTransportOptions {
  profile: Profile;
  /**
   * The profile's ssh settings, checked against `SshTransportOptionsSchema` (the registry's
   * factory is handed them so). Default: read from the profile and checked (`sshSettings`).
   */
  settings?: SshSettings;
  /** The environment (SSH_AUTH_SOCK). Default: this process's. */
  env?: NodeJS.ProcessEnv;
}

function describeHost(host: ResolvedHost): string {
  return `${host.user}@${host.hostname}:${host.port}${host.alias !== host.hostname ? ` (${host.alias})` : ''}`;
}

/** A channel could not be opened: the command did not start. */

function isChannelOpenFailure(error: unknown): boolean {
  return error instanceof Error && /Channel open failure|open failed/i.test(error.message);
}

/**
 * The SSH transport: one persistent ssh2 connection per host per process, shared by every
 * operation, with host keys checked against known_hosts and the ssh config honoured
 * (Host aliases, HostName, User, Port, IdentityFile, IdentitiesOnly, ProxyJump hop by hop,
 * ServerAliveInterval, UserKnownHostsFile), the agent through SSH_AUTH_SOCK, a bound on
 * concurrent channels, and reconnection with backoff after the connection drops.
 */
export class SshTransport implements TransportV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'ssh';
  readonly target: string;
  private readonly profile: Profile;
  private readonly settings: SshSettings;
  private readonly env: NodeJS.ProcessEnv;
  private connection: Connection | null = null;
  private connecting: Promise<Connection> | null = null;
  private failures = 0;
  private limit: number;
  private active = 0;
  private readonly waiters: Array<() => void> = [];
  private closedByUser = false;
  private connects = 0;

  constructor(options: SshTransportOptions) {
    this.profile = options.profile;
    this.settings = options.settings ?? sshSettings(options.profile);
    this.env = options.env ?? process.env;
    if (!options.profile.host)
      throw new YonderError(
        'E_INVALID_PROFILE',
        `Profile "${options.profile.name}" has no host to reach over SSH.`,
      );
    this.target = `ssh:${options.profile.host}`;
    this.limit = this.settings.maxChannels ?? DEFAULT_MAX_CHANNELS;
  }

  private configFiles(): string[] | undefined {
    const config = this.settings.config;
    return config
      ? [config.replace(/^~(?=\/)/, this.env.HOME ?? '~'), '/etc/ssh/ssh_config']
      : undefined;
  }

  private resolve(destination: string): ResolvedHost {
    const files = this.configFiles();
    return resolveHost(destination, { ...(files ? { configFiles: files } : {}), env: this.env });
  }

  /** Keys to offer, read from the identity files; encrypted ones without a passphrase are noted. */
  private identities(host: ResolvedHost): {
    keys: Array<{ file: string; key: Buffer }>;
    problems: string[];
  } {
    const keys: Array<{ file: string; key: Buffer }> = [];
    const problems: string[] = [];
    for (const file of host.identityFiles) {
      let data: Buffer;
      try {
        data = readFileSync(file);
      } catch (error) {
        if (host.identityFilesExplicit)
          problems.push(
            `the identity file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? getErrorMessage(error)})`,
          );
        continue;
      }
      const parsed = utils.parseKey(data);
      if (parsed instanceof Error) {
        problems.push(
          /encrypted|passphrase/i.test(parsed.message)
            ? `the key ${file} is encrypted and no passphrase is available: load it into ssh-agent (ssh-add ${file}) and make sure SSH_AUTH_SOCK is set`
            : `the key ${file} cannot be read: ${parsed.message}`,
        );
        continue;
      }
      keys.push({ file, key: data });
    }
    return { keys, problems };
  }

  private async connectHop(
    host: ResolvedHost,
    through: ConnectConfig['sock'] | undefined,
    clients: Client[],
  ): Promise<Client> {
    // Our own TCP socket, with Nagle off: SSH sends many small packets, and with Nagle and
    // delayed ACKs every command would wait some 40 ms twice.
    const sock = through ?? (await this.tcp(host));
    let entries: KnownHostEntry[];
    entries = loadKnownHosts([...host.userKnownHostsFiles, ...host.globalKnownHostsFiles]);
    const { keys, problems } = this.identities(host);
    const agent =
      host.identityAgent && !(host.identitiesOnly && keys.length > 0)
        ? host.identityAgent
        : undefined;
    if (keys.length === 0 && !agent) {
      throw new YonderError(
        'E_TRANSPORT',
        `No way to authenticate to ${describeHost(host)}: ${problems.length > 0 ? problems.join('; ') : 'no identity file exists and no ssh-agent is available (SSH_AUTH_SOCK)'}.`,
      );
    }
    const known = entries.filter((entry) => entry.marker === null);
    const recordedTypes = new Set(
      known
        .filter(
          (entry) => checkHostKey([entry], host.hostname, host.port, entry.key).status === 'ok',
        )
        .map((entry) => entry.keyType),
    );
    const serverHostKey = [...recordedTypes].flatMap((type) =>
      type === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [type],
    );
    let refusal: string | null = null;
    let pinned: Buffer | null = null;
    const client = new Client();
    // Always listening: an error between 'ready' and the connection's own listeners (a cut
    // just as authentication completes) would otherwise be thrown as uncaught. The connection
    // learns of it through 'close'.
    client.on('error', () => {});
    clients.push(client);
    const authHandler: AuthMethod[] = [];
    for (const { key } of keys)
      authHandler.push({ type: 'publickey', username: host.user, key } as AuthMethod);
    if (agent) authHandler.push({ type: 'agent', username: host.user, agent } as AuthMethod);
    const config: ConnectConfig = {
      host: host.hostname,
      port: host.port,
      username: host.user,
      readyTimeout: (host.connectTimeoutSeconds ?? 20) * 1000,
      keepaliveInterval: (host.serverAliveIntervalSeconds || 15) * 1000,
      keepaliveCountMax: host.serverAliveCountMax || 3,
      authHandler,
      ...(sock ? { sock } : {}),
      ...(serverHostKey.length > 0
        ? { algorithms: { serverHostKey: serverHostKey as never } }
        : {}),
      hostVerifier: (key: Buffer) => {
        if (pinned) return pinned.equals(key);
        const parsed = utils.parseKey(key);
        const type = parsed instanceof Error ? 'unknown' : parsed.type;
        const verdict = checkHostKey(entries, host.hostname, host.port, key);
        const print = `${type} ${fingerprint(key)}`;
        if (verdict.status === 'ok') {
          pinned = key;
          return true;
        }
        if (verdict.status === 'revoked') {
          refusal = `The host key of ${describeHost(host)} (${print}) is marked @revoked in ${verdict.entry.file}:${verdict.entry.line}; refusing to connect.`;
          return false;
        }
        if (verdict.status === 'changed') {
          const where = verdict.recorded.map((entry) => `${entry.file}:${entry.line}`).join(', ');
          refusal = `The host key of ${describeHost(host)} has CHANGED (now ${print}; recorded in ${where}). This can be an attack; if the change is expected, remove the old entry and check the new key.`;
          return false;
        }
        if (this.settings.acceptNewHostKeys && host.userKnownHostsFiles[0]) {
          appendKnownHost(
            host.userKnownHostsFiles[0],
            host.hostname,
            host.port,
            type,
            key,
            host.hashKnownHosts,
          );
          entries = loadKnownHosts([...host.userKnownHostsFiles, ...host.globalKnownHostsFiles]);
          pinned = key;
          return true;
        }
        refusal = `The host key of ${describeHost(host)} is unknown (${print}). Check the fingerprint with the host's administrator, then trust it with: ssh-keyscan -p ${host.port} ${host.hostname} >> ${host.userKnownHostsFiles[0] ?? '~/.ssh/known_hosts'} (or let the profile accept new keys: transportOptions.acceptNewHostKeys).`;
        return false;
      },
    };
    await new Promise<void>((resolvePromise, rejectPromise) => {
      const onError = (error: Error & { level?: string }): void => {
        cleanup();
        const reason =
          refusal ??
          (error.level === 'client-authentication'
            ? `Authentication to ${describeHost(host)} failed (tried ${[...keys.map((k) => k.file), ...(agent ? [`agent ${agent}`] : [])].join(', ')})${problems.length > 0 ? `; also: ${problems.join('; ')}` : ''}.`
            : `Cannot connect to ${describeHost(host)}: ${error.message}`);
        rejectPromise(new YonderError('E_TRANSPORT', reason, { cause: error }));
      };
      const onReady = (): void => {
        cleanup();
        resolvePromise();
      };
      const cleanup = (): void => {
        client.removeListener('error', onError);
        client.removeListener('ready', onReady);
      };
      client.on('error', onError);
      client.on('ready', onReady);
      try {
        client.connect(config);
      } catch (error) {
        onError(error as Error);
      }
    });
    return client;
  }

  private tcp(host: ResolvedHost): Promise<Socket> {
    return new Promise((resolvePromise, rejectPromise) => {
      const socket = createConnection({ host: host.hostname, port: host.port });
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

  /** When the next connection attempt may start (backoff after failures, with jitter). */
  private nextAttemptAt = 0;

  private async open(): Promise<Connection> {
    const destination = this.resolve(this.profile.host as string);
    const clients: Client[] = [];
    try {
      let sock: ConnectConfig['sock'] | undefined;
      let previous: Client | null = null;
      const hops = destination.proxyJump.map((jump) => {
        const parts = splitDestination(jump);
        const resolved = this.resolve(parts.host);
        return {
          ...resolved,
          ...(parts.user ? { user: parts.user } : {}),
          ...(parts.port ? { port: parts.port } : {}),
        };
      });
      for (const hop of [...hops, destination]) {
        if (previous) {
          const from = previous;
          sock = await new Promise<ClientChannel>((resolvePromise, rejectPromise) => {
            from.forwardOut('127.0.0.1', 0, hop.hostname, hop.port, (error, stream) => {
              if (error)
                rejectPromise(
                  new YonderError(
                    'E_TRANSPORT',
                    `The jump host could not reach ${describeHost(hop)}: ${error.message}`,
                    { cause: error },
                  ),
                );
              else resolvePromise(stream);
            });
          });
        }
        previous = await this.connectHop(hop, sock, clients);
      }
      const final = previous as Client;
      const connection: Connection = { clients, final, closed: false, reason: null };
      for (const client of clients) {
        client.on('error', (error: Error) => {
          connection.reason = error.message;
        });
        client.on('close', () => {
          connection.closed = true;
          connection.reason ??= 'the connection closed';
          if (this.connection === connection) this.connection = null;
          for (const other of clients) other.end();
        });
      }
      this.failures = 0;
      this.connects += clients.length;
      return connection;
    } catch (error) {
      for (const client of clients) client.end();
      this.failures += 1;
      this.nextAttemptAt =
        Date.now() + Math.min(30_000, 250 * 2 ** (this.failures - 1)) * (0.8 + Math.random() * 0.4);
      throw error;
    }
  }

  /**
   * The live connection, or a new one. After failures, waits out the backoff — but never longer
   * than the caller's own time limit: if the wait would not fit, it fails at once.
   */
  private async ensure(budgetMs: number): Promise<Connection> {
    if (this.closedByUser) throw new YonderError('E_TRANSPORT', 'The SSH transport was closed.');
    if (this.connection && !this.connection.closed) return this.connection;
    const wait = this.nextAttemptAt - Date.now();
    if (wait > 0 && !this.connecting) {
      if (wait > budgetMs) {
        throw new YonderError(
          'E_TRANSPORT',
          `${this.target} could not be reached (${this.failures} failed attempts); the next attempt is in ${Math.ceil(wait / 1000)} s.`,
        );
      }
      await sleep(wait);
    }
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    this.connection = await this.connecting;
    return this.connection;
  }

  private async acquire(): Promise<void> {
    while (this.active >= this.limit)
      await new Promise<void>((resolvePromise) => this.waiters.push(resolvePromise));
    this.active += 1;
  }

  private release(): void {
    this.active -= 1;
    this.waiters.shift()?.();
  }

  async run(argv: readonly string[], options: RunOptionsV1 = {}): Promise<RunResultV1> {
    if (argv.length === 0) throw new YonderError('E_TRANSPORT', 'No program given to run.');
    if (options.signal?.aborted)
      throw new YonderError('E_TRANSPORT', 'Command aborted before it started.');
    const command = remoteCommandLine(argv, options);
    await this.acquire();
    try {
      for (let attempt = 0; ; attempt += 1) {
        const connection = await this.ensure(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
        try {
          const result = await execOnce(connection, command, options, this.target);
          if (result.exitCode === 127 && result.stderr.startsWith(NOT_FOUND_MARK))
            throw new YonderError(
              'E_COMMAND_NOT_FOUND',
              `${argv[0]} was not found on ${this.target}.`,
            );
          return result;
        } catch (error) {
          const notOpened = error instanceof ChannelNotOpened;
          const cause = notOpened ? (error.cause as Error) : (error as Error);
          if (notOpened && isChannelOpenFailure(cause) && attempt < 20) {
            // The server refused another session (MaxSessions): use fewer at once, then retry.
            this.limit = Math.max(1, Math.min(this.limit, this.active - 1 || 1));
            await sleep(Math.min(2_000, 25 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random()));
            continue;
          }
          if (notOpened && attempt === 0) {
            // The command never started (the connection had died unnoticed): reconnect once.
            this.disconnect();
            continue;
          }
          if (YonderError.isInstance(cause)) throw cause;
          if (connection.closed || notOpened) {
            throw new YonderError(
              'E_TRANSPORT',
              `The connection to ${this.target} was lost: ${connection.reason ?? cause.message}`,
              {
                cause,
              },
            );
          }
          throw new YonderError('E_TRANSPORT', `SSH to ${this.target} failed: ${cause.message}`, {
            cause,
          });
        }
      }
    } finally {
      this.release();
    }
  }

  runScript(script: string, args: readonly string[], options?: RunOptionsV1): Promise<RunResultV1> {
    return this.run(['sh', '-c', script, 'yonder-script', ...args], options);
  }

  /** Drop the connection now (tests, and callers that know it is broken). The next call reconnects. */
  disconnect(): void {
    const connection = this.connection;
    this.connection = null;
    if (connection) for (const client of connection.clients) client.end();
  }

  async close(): Promise<void> {
    this.closedByUser = true;
    this.disconnect();
  }

  /** SSH handshakes made so far (one per hop per connection), for benchmarks and diagnostics. */
  get handshakes(): number {
    return this.connects;
  }

  /** Channels in use and the current bound, for tests and diagnostics. */
  get channels(): { active: number; limit: number } {
    return { active: this.active, limit: this.limit };
  }
}

/** A transport to the profile's host over SSH. */
export function createSshTransport(options: SshTransportOptions): SshTransport {
  return new SshTransport(options);
}

/** The ssh transport as the registry makes it for a profile and its checked settings, with the schema of those settings. */
export const sshTransportFactory: TransportFactoryV1<SshSettings> = Object.assign(
  (profile: Profile, settings: SshSettings) => createSshTransport({ profile, settings }),
  { optionsSchema: SshTransportOptionsSchema },
);
