/** The ssh2 transport: one kept SSH connection per host (through ProxyJump hops), host keys checked against known_hosts, commands run under a channel bound with reconnect and backoff. */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Profile,
  type RunOptionsV1,
  type RunResultV1,
  type TransportDescriptionV1,
  type TransportFactoryV1,
  type TransportV1,
  YonderError,
} from '@yonder/core';
import { SessionLimit } from './session-limit.js';
import type { ResolvedHost, ResolveOptions } from './ssh-config.js';
import {
  ChannelNotOpened,
  type Connection,
  DEFAULT_MAX_CHANNELS,
  DEFAULT_TIMEOUT_MS,
  execOnce,
  NOT_FOUND_MARK,
  remoteCommandLine,
  StdoutSinkFailed,
} from './ssh-exec.js';
import { planRoute } from './ssh-route.js';
import {
  type SshSettings,
  SshTransportOptionsSchema,
  sshSettings,
} from './ssh-transport-options.js';
import { checkSsh2OptionalImports } from './ssh2-optional-imports.js';

export interface SshTransportOptions {
  profile: Profile;
  /**
   * The profile's ssh settings, checked against `SshTransportOptionsSchema` (the registry's
   * factory is handed them so). Default: read from the profile and checked (`sshSettings`).
   */
  settings?: SshSettings;
  /** The environment (SSH_AUTH_SOCK). Default: this process's. */
  env?: NodeJS.ProcessEnv;
  /**
   * Where to say what the ssh config asks for that this transport ignores (each message once).
   * Default: stderr, as `yonder: warning: …`.
   */
  warn?: (message: string) => void;
}

/** A channel could not be opened: the command did not start. */

function isChannelOpenFailure(error: unknown): boolean {
  return error instanceof Error && /Channel open failure|open failed/i.test(error.message);
}

/**
 * The SSH transport (ssh2, in-process): one persistent connection per host per process, shared
 * by every operation, over the route the ssh config gives (`planRoute`: ProxyJump chains,
 * ProxyCommand, HostKeyAlias; `--ssh-config` read as `ssh -F`), host keys checked against
 * known_hosts, the agent through SSH_AUTH_SOCK, a bound on concurrent channels, and
 * reconnection with backoff after the connection drops. What the config asks for that ssh2
 * ignores is said once through `warn`; what it cannot do is refused naming it (`describe()`
 * lists both for `profile check`).
 */
export class SshTransport implements TransportV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'ssh';
  readonly streamsStdout = true;
  readonly target: string;
  private readonly profile: Profile;
  private readonly settings: SshSettings;
  private readonly env: NodeJS.ProcessEnv;
  private connection: Connection | null = null;
  private connecting: Promise<Connection> | null = null;
  private failures = 0;
  private readonly sessions: SessionLimit;
  private closedByUser = false;
  private connects = 0;
  private readonly warn: (message: string) => void;
  private readonly warned = new Set<string>();

  constructor(options: SshTransportOptions) {
    this.profile = options.profile;
    this.settings = options.settings ?? sshSettings(options.profile);
    this.env = options.env ?? process.env;
    this.warn =
      options.warn ?? ((message) => process.stderr.write(`yonder: warning: ${message}\n`));
    if (!options.profile.host)
      throw new YonderError(
        'E_INVALID_PROFILE',
        `Profile "${options.profile.name}" has no host to reach over SSH.`,
      );
    this.target = `ssh:${options.profile.host}`;
    this.sessions = new SessionLimit(this.settings.maxChannels ?? DEFAULT_MAX_CHANNELS);
  }

  private resolveOptions(): ResolveOptions {
    const config = this.settings.config;
    return {
      // --ssh-config is ssh -F: that file only (it must exist), never /etc/ssh/ssh_config.
      ...(config ? { configFile: config.replace(/^~(?=\/)/, this.env.HOME ?? '~') } : {}),
      env: this.env,
    };
  }

  /** The hops to the profile's host, with what ssh2 ignores reported once on stderr. */
  private route(): ResolvedHost[] {
    const route = planRoute(this.profile.host as string, this.resolveOptions());
    for (const host of route)
      for (const warning of host.warnings) {
        if (this.warned.has(warning)) continue;
        this.warned.add(warning);
        this.warn(`${warning}`);
      }
    return route;
  }

  /**
   * The route the transport takes and what it cannot honour, for `yonder profile check`: every
   * hop (user, host name, port, how it is reached, identities) and the warnings and refusals of
   * its config. Never connects.
   */
  async describe(): Promise<TransportDescriptionV1> {
    const route = planRoute(this.profile.host as string, this.resolveOptions());
    const hops = route.map((host, index) => ({
      destination: host.alias,
      user: host.user,
      hostname: host.hostname,
      port: host.port,
      via:
        index > 0
          ? `jump ${route[index - 1]?.alias}`
          : host.proxyCommand
            ? `ProxyCommand ${host.proxyCommand}`
            : 'tcp',
      identityFiles: host.identityFiles,
      ...(host.hostKeyAlias ? { hostKeyAlias: host.hostKeyAlias } : {}),
    }));
    const unique = (list: string[]): string[] => [...new Set(list)];
    return {
      facts: { transport: 'ssh2', route: hops },
      warnings: unique(route.flatMap((host) => host.warnings)),
      problems: unique(route.flatMap((host) => host.refusals)),
    };
  }

  /** When the next connection attempt may start (backoff after failures, with jitter). */
  private nextAttemptAt = 0;

  private async open(): Promise<Connection> {
    try {
      // ssh2 (about 100 ms of module loading) is loaded only when a connection is opened, so a
      // process that never uses this transport never pays for it; what it would look up on the
      // way is checked first.
      checkSsh2OptionalImports();
      const { openRoute } = await import('./ssh-connect.js');
      const opened = await openRoute(this.route(), {
        acceptNewHostKeys: this.settings.acceptNewHostKeys === true,
        env: this.env,
      });
      const { clients } = opened;
      const connection: Connection = { clients, final: opened.final, closed: false, reason: null };
      for (const client of clients) {
        client.on('error', (error: Error) => {
          connection.reason = error.message;
        });
        client.on('close', () => {
          connection.closed = true;
          connection.reason ??= 'the connection closed';
          if (this.connection === connection) this.connection = null;
          opened.close();
        });
      }
      this.failures = 0;
      this.connects += clients.length;
      return connection;
    } catch (error) {
      this.failures += 1;
      this.nextAttemptAt =
        performance.now() +
        Math.min(30_000, 250 * 2 ** (this.failures - 1)) * (0.8 + Math.random() * 0.4);
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
    const wait = this.nextAttemptAt - performance.now();
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

  async run(argv: readonly string[], options: RunOptionsV1 = {}): Promise<RunResultV1> {
    if (argv.length === 0) throw new YonderError('E_TRANSPORT', 'No program given to run.');
    if (options.signal?.aborted)
      throw new YonderError('E_TRANSPORT', 'Command aborted before it started.');
    const command = remoteCommandLine(argv, options);
    await this.sessions.acquire();
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
          if (error instanceof StdoutSinkFailed) throw error.error;
          const notOpened = error instanceof ChannelNotOpened;
          const cause = notOpened ? (error.cause as Error) : (error as Error);
          if (notOpened && isChannelOpenFailure(cause) && attempt < 20) {
            // The server refused another session (MaxSessions): use fewer at once, then retry.
            await this.sessions.refused(attempt);
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
      this.sessions.release();
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
    return this.sessions.state;
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
