/** The openssh transport: every command through the system `ssh` over one master connection (ControlMaster), so whatever the user's ssh can do works, a login that needs a person is made once (`connect`), and nothing ever prompts or hangs. */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  type JsonObject,
  type Profile,
  type RunOptionsV1,
  type RunResultV1,
  type TransportDescriptionV1,
  type TransportFactoryV1,
  type TransportV1,
  YonderError,
} from '@yonder/core';
import { withFixedSearchPath } from '@yonder/core/backend-kit';
import {
  DEFAULT_TIMEOUT_MS,
  feedInput,
  NOT_FOUND_MARK,
  RemoteAnswer,
  type RemoteInvocation,
  readChildStdout,
  remoteInvocation,
} from '@yonder/core/transport-kit';
import {
  configArguments,
  controlArguments,
  controlSettingsFile,
  exitMaster,
  isSessionRefused,
  lastLines,
  loginError,
  masterRunning,
  openMaster,
  resolveWithSsh,
  type SshProgram,
  type SshResolved,
} from './openssh-control.js';
import { userControlSettings } from './openssh-control-cache.js';
import {
  type OpensshSettings,
  OpensshTransportOptionsSchema,
  opensshSettings,
} from './openssh-transport-options.js';
import { SessionLimit } from './session-limit.js';

const DEFAULT_MAX_CHANNELS = 8;

/**
 * Before the options of a command that must go through the master connection up already: no
 * new login instead, ever. ssh opens one silently when the master's server refuses one more
 * session (MaxSessions); with these it fails at once (the proxy `false`), says the server
 * refused, and the command waits for a free session on the master.
 */
const THROUGH_MASTER_ONLY = ['-o', 'ControlMaster=no', '-o', 'ProxyCommand=false'] as const;

/**
 * Before the options of every command: only errors on stderr (not a server's Banner, which
 * would end up in messages), and nothing that could ask: BatchMode, and for a jump host's ssh
 * (which OpenSSH starts without BatchMode) no askpass and no terminal (see `once`).
 */
const COMMAND_OPTIONS = ['-o', 'LogLevel=ERROR'] as const;

/**
 * Before the options of a command run again to learn why its proxy (a ProxyJump's ssh) ended
 * before the host answered: with ControlPersist, ssh sends a proxy's stderr to /dev/null, and
 * with it the jump host's own words (a login there that needs a person). No master here.
 */
const PROXY_SPEAKS = [
  '-o',
  'ControlPersist=no',
  '-o',
  'ControlMaster=no',
  '-o',
  'ControlPath=none',
] as const;

/**
 * Why `host` cannot be given to ssh, when it names a port as `host:2222` (ssh takes that all
 * as a host name; ssh2 reads the port); undefined when it names none that way.
 */
export function portInHost(host: string): string | undefined {
  const port = /^((?:[^@]*@)?[^:@/[\]]+):(\d+)$/.exec(host);
  if (!port) return undefined;
  const name = (port[1] as string).replace(/^.*@/, '');
  return `the host ${JSON.stringify(host)} names a port, which the system ssh (--transport openssh) does not read from a host name. Fix: give the port in your ssh config (Host ${name}, then Port ${port[2]}) and --host ${port[1]}, or use --transport ssh2, which reads it there.`;
}

/**
 * The ssh processes of every openssh transport of this process. Each runs in a session of its
 * own (no terminal), so a Ctrl-C on the terminal does not reach it: they end with this process.
 */
const running = new Set<ChildProcess>();
let endWithProcess = false;
function track(child: ChildProcess): void {
  running.add(child);
  child.once('close', () => running.delete(child));
  if (endWithProcess) return;
  endWithProcess = true;
  process.once('exit', () => {
    for (const each of running) each.kill('SIGTERM');
  });
}

/** How one ssh process goes: as usual, through the master only, or to hear its proxy. */
type Mode = 'usual' | 'master-only' | 'proxy-speaks';

const MODE_OPTIONS: Record<Mode, readonly string[]> = {
  usual: [],
  'master-only': THROUGH_MASTER_ONLY,
  'proxy-speaks': PROXY_SPEAKS,
};

/** What ssh said when its proxy ended before the host answered (THROUGH_MASTER_ONLY's `false`: no master was there to go through). */
function noMasterThere(stderr: string): boolean {
  return /kex_exchange_identification|Connection closed by UNKNOWN/i.test(stderr);
}

export interface OpensshTransportOptions {
  profile: Profile;
  /** The profile's openssh settings, checked (the registry's factory is handed them so). Default: read from the profile. */
  settings?: OpensshSettings;
  /** The environment ssh runs in (SSH_AUTH_SOCK, SSH_ASKPASS, XDG_RUNTIME_DIR). Default: this process's. */
  env?: NodeJS.ProcessEnv;
  /** The ssh program. Default `ssh`, found on PATH. */
  program?: string;
}

/** How `connect` went: whether a master was already up. */
export interface OpensshConnectResult {
  alreadyConnected: boolean;
}

/**
 * Runs each command as `ssh -o BatchMode=yes … HOST 'exec /bin/sh -s'` through a master
 * connection (ControlMaster=auto, ControlPath in a private directory, ControlPersist), the argv
 * on stdin (remote-invocation.ts). A publickey host gets its master from the first command; a
 * host that asks a person gets it from `login()` (`yonder connect`); without one such a command fails at once
 * with `E_LOGIN_REQUIRED`, and later commands do not try again until a master is up.
 */
export class OpensshTransport implements TransportV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'openssh';
  readonly streamsStdout = true;
  readonly target: string;
  private readonly profile: Profile;
  private readonly host: string;
  private readonly settings: OpensshSettings;
  private readonly ssh: SshProgram;
  private base: Promise<string[]> | null = null;
  private readonly children = new Set<ChildProcess>();
  private closed = false;
  private readonly sessions: SessionLimit;
  /** Until a command has reached the host, the next waits for it (one login, not many at once). */
  private reached = false;
  private gate: Promise<void> | null = null;
  private refused: YonderError | null = null;
  /** Commands that found no master to go through in a row: past two, commands may log in themselves again. */
  private masterMissed = 0;

  constructor(options: OpensshTransportOptions) {
    this.profile = options.profile;
    if (!options.profile.host)
      throw new YonderError(
        'E_INVALID_PROFILE',
        `Profile "${options.profile.name}" has no host to reach over SSH.`,
      );
    this.host = options.profile.host;
    const port = portInHost(this.host);
    if (port)
      throw new YonderError('E_INVALID_PROFILE', `Profile "${options.profile.name}": ${port}`);
    this.settings = options.settings ?? opensshSettings(options.profile);
    // Never an `ssh` (or a ProxyCommand's tools) found in the working directory.
    const env = withFixedSearchPath(options.env ?? process.env);
    this.ssh = { program: options.program ?? 'ssh', env };
    this.target = `ssh:${this.host}`;
    this.sessions = new SessionLimit(this.settings.maxChannels ?? DEFAULT_MAX_CHANNELS);
  }

  /**
   * The options of every call, from the user's own control settings (`ssh -G`, kept a minute
   * between processes while the config files stay as they were): the user's ControlPath is kept.
   */
  private arguments(): Promise<string[]> {
    this.base ??= (async () => {
      const config = configArguments(this.settings, this.ssh.env);
      const user = await userControlSettings(
        this.ssh,
        config,
        this.host,
        controlSettingsFile(this.host, this.settings, this.ssh.env),
      );
      return [
        ...config,
        ...controlArguments(this.host, user, this.settings, this.ssh.env),
        ...(this.settings.acceptNewHostKeys ? ['-o', 'StrictHostKeyChecking=accept-new'] : []),
      ];
    })();
    this.base.catch(() => {
      this.base = null;
    });
    return this.base;
  }

  async run(argv: readonly string[], options: RunOptionsV1 = {}): Promise<RunResultV1> {
    if (argv.length === 0) throw new YonderError('E_TRANSPORT', 'No program given to run.');
    if (this.closed) throw new YonderError('E_TRANSPORT', 'The openssh transport was closed.');
    if (options.signal?.aborted)
      throw new YonderError('E_TRANSPORT', 'Command aborted before it started.');
    const args = await this.arguments();
    while (!this.reached && this.gate) await this.gate;
    if (this.refused) {
      // A login needed a person: try again only once a master is up (no lockout by retries).
      if (!(await masterRunning(this.ssh, args, this.host))) throw this.refused;
      this.refused = null;
    }
    let open: (() => void) | null = null;
    if (!this.reached) this.gate = new Promise((resolve) => (open = resolve));
    await this.sessions.acquire();
    try {
      for (let attempt = 0; ; attempt += 1) {
        const invocation = remoteInvocation(argv, options);
        // Once a command has reached the host, its master is up: the others go through it only.
        const masterOnly = this.reached && this.masterMissed < 2;
        const started = (): void => {
          this.reached = true;
          open?.();
        };
        let outcome = await this.once(
          args,
          invocation,
          masterOnly ? 'master-only' : 'usual',
          started,
        );
        if (outcome.kind === 'proxy-ended') {
          // Its proxy ended before the host answered, and ssh hid why: once more, to hear it.
          const heard = await this.once(
            args,
            remoteInvocation(argv, options),
            'proxy-speaks',
            started,
          );
          outcome =
            heard.kind === 'ok' ||
            (heard.kind === 'failed' && heard.error.code === 'E_LOGIN_REQUIRED')
              ? heard
              : { kind: 'failed', error: outcome.error };
        }
        if (outcome.kind === 'no-master') {
          // The master went (ControlPersist ran out, it was closed): this command opens it again.
          this.masterMissed += 1;
          this.reached = false;
          continue;
        }
        if (masterOnly && outcome.kind === 'ok') this.masterMissed = 0;
        if (outcome.kind === 'refused' && attempt < 20) {
          // The server refused one more session (MaxSessions): use fewer at once, then retry.
          await this.sessions.refused(attempt);
          continue;
        }
        if (outcome.kind !== 'ok') {
          if (outcome.error.code === 'E_LOGIN_REQUIRED') this.refused = outcome.error;
          throw outcome.error;
        }
        const result = outcome.result;
        if (result.exitCode === 127 && result.stderr.startsWith(NOT_FOUND_MARK))
          throw new YonderError(
            'E_COMMAND_NOT_FOUND',
            `${argv[0]} was not found on ${this.target}.`,
          );
        return result;
      }
    } finally {
      this.sessions.release();
      if (this.gate && open) {
        (open as () => void)();
        this.gate = null;
      }
    }
  }

  /** One ssh process for one invocation. */
  private once(
    args: readonly string[],
    invocation: RemoteInvocation,
    mode: Mode,
    onStarted: () => void,
  ): Promise<
    | { kind: 'ok'; result: RunResultV1 }
    | { kind: 'failed' | 'refused' | 'no-master' | 'proxy-ended'; error: YonderError }
  > {
    const options = invocation.options;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const started = performance.now();
    const child = spawn(
      this.ssh.program,
      [
        ...MODE_OPTIONS[mode],
        ...COMMAND_OPTIONS,
        ...args,
        '-o',
        'BatchMode=yes',
        '-T',
        '--',
        this.host,
        invocation.command,
      ],
      {
        // A jump host's ssh (ProxyJump) gets no BatchMode from ssh: with no terminal (its own
        // session) and no askpass, a login there that needs a person fails at once instead of asking.
        env: { ...this.ssh.env, SSH_ASKPASS_REQUIRE: 'never' },
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      },
    );
    this.children.add(child);
    track(child);
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
      const timedOut = (): YonderError =>
        new YonderError(
          'E_TIMEOUT',
          `Command timed out after ${Math.round(timeoutMs / 100) / 10}s on ${this.target}.`,
        );
      const timer = setTimeout(() => {
        stop();
        finish({ kind: 'failed', error: timedOut() });
      }, timeoutMs + 2_000);
      const onAbort = (): void => {
        stop();
        finish({
          kind: 'failed',
          error: new YonderError('E_TRANSPORT', `Command aborted on ${this.target}.`),
        });
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const take = (chunk: Buffer): Promise<void> | undefined => {
        const before = answer.started;
        const busy = answer.pushStdout(chunk);
        if (!before && answer.started) onStarted();
        if (!answer.failed) return busy;
        stop();
        return undefined;
      };
      // Streamed (onStdout, bytes): read into one buffer of ours, no more until the caller has
      // taken it. Kept output (no sink) must own its bytes, so it is read as Node reads it.
      const streamed =
        invocation.options.onStdout !== undefined && invocation.options.encoding === 'buffer';
      if (!(streamed && readChildStdout(child.stdout, take)))
        child.stdout.on('data', (chunk: Buffer) => {
          const busy = take(chunk);
          if (busy) {
            child.stdout.pause();
            busy.then(() => child.stdout.resume());
          }
        });
      child.stderr.on('data', (chunk: Buffer) => answer.pushStderr(chunk));
      // ssh gone before reading all of stdin (it failed to log in): nothing to report here.
      child.stdin.on('error', () => {});
      child.on('error', (error) =>
        finish({
          kind: 'failed',
          error: new YonderError(
            'E_TRANSPORT',
            `Cannot run ${this.ssh.program} for ${this.target}: ${error.message}`,
            { cause: error },
          ),
        }),
      );
      child.on('close', (code, signal) => {
        this.children.delete(child);
        clearTimeout(killer);
        // What came is written before the result (with onStdout); a sink that failed fails it.
        answer.delivered().then(
          () => closed(code, signal),
          // The sink's own error, as it threw it (the caller knows it by identity).
          (error: unknown) => finish({ kind: 'failed', error: error as YonderError }),
        );
      });
      const closed = (code: number | null, signal: NodeJS.Signals | null): void => {
        const status = answer.status;
        if (!answer.started) {
          const said = answer.preamble();
          if (isSessionRefused(said))
            finish({
              kind: 'refused',
              error: new YonderError(
                'E_TRANSPORT',
                `${this.target} refused a session: ${lastLines(said)}`,
              ),
            });
          else if (mode === 'master-only' && (code === 255 || signal) && noMasterThere(said))
            finish({
              kind: 'no-master',
              error: new YonderError('E_TRANSPORT', `No master connection to ${this.target}.`),
            });
          else if (mode === 'usual' && code === 255 && noMasterThere(said))
            finish({
              kind: 'proxy-ended',
              error: loginError(this.profile.name, this.host, said, code),
            });
          else if (code === 255 || signal)
            finish({ kind: 'failed', error: loginError(this.profile.name, this.host, said, code) });
          else
            finish({
              kind: 'failed',
              error: new YonderError(
                'E_TRANSPORT',
                `The login shell on ${this.target} did not start /bin/sh (exit status ${code}): ${lastLines(said) || 'it printed nothing'}`,
              ),
            });
          return;
        }
        if (status === null && (code === 255 || signal)) {
          finish({
            kind: 'failed',
            error: new YonderError(
              'E_TRANSPORT',
              `The connection to ${this.target} was lost while a command ran (${lastLines(answer.result().stderr, 2) || `ssh exit status ${code ?? signal}`}).`,
            ),
          });
          return;
        }
        const exitCode = status ?? code;
        if (exitCode === 124 && performance.now() - started >= timeoutMs) {
          finish({ kind: 'failed', error: timedOut() });
          return;
        }
        finish({
          kind: 'ok',
          result: {
            exitCode,
            signal: null,
            ...answer.result(),
            durationMs: Math.round(performance.now() - started),
          },
        });
      };
      void feedInput(
        answer,
        invocation,
        (chunk) => child.stdin.write(chunk),
        () => child.stdin.end(),
      );
    });
  }

  runScript(script: string, args: readonly string[], options?: RunOptionsV1): Promise<RunResultV1> {
    return this.run(['sh', '-c', script, 'yonder-script', ...args], options);
  }

  /**
   * Open the master connection, with ssh asking on the terminal (`stdio: 'inherit'`) or through
   * SSH_ASKPASS whatever the login needs. Nothing is done when a master is up already.
   * @throws YonderError `E_LOGIN_REQUIRED` when ssh could not log in; `E_TRANSPORT` otherwise.
   */
  async login(stdio: 'inherit' | 'pipe' = 'inherit'): Promise<OpensshConnectResult> {
    const args = await this.arguments();
    if (await masterRunning(this.ssh, args, this.host)) return { alreadyConnected: true };
    const opened = await openMaster(this.ssh, args, this.host, stdio);
    if (opened.code !== 0 || !(await masterRunning(this.ssh, args, this.host)))
      throw loginError(this.profile.name, this.host, opened.stderr, opened.code);
    this.refused = null;
    return { alreadyConnected: false };
  }

  /** Close the master connection (`ssh -O exit`); false when none was up. */
  async logout(): Promise<boolean> {
    const args = await this.arguments();
    return exitMaster(this.ssh, args, this.host);
  }

  /** How ssh reaches the host (`ssh -G`): user, host name, port, proxies, identities, control path, and whether the master is up. */
  async describe(): Promise<TransportDescriptionV1> {
    const args = await this.arguments();
    // With the options every call gets: the ControlPath as ssh expands it.
    const resolved: SshResolved = await resolveWithSsh(this.ssh, args, this.host);
    const first = (key: string): string | undefined => {
      const value = resolved.get(key)?.[0];
      return value === undefined || value === 'none' ? undefined : value;
    };
    const route: JsonObject = { transport: this.id };
    for (const [name, key] of [
      ['user', 'user'],
      ['hostname', 'hostname'],
      ['port', 'port'],
      ['proxyJump', 'proxyjump'],
      ['proxyCommand', 'proxycommand'],
      ['controlPath', 'controlpath'],
    ] as const) {
      const value = first(key);
      if (value !== undefined) route[name] = value;
    }
    const identities = [
      ...(resolved.get('identityfile') ?? []),
      ...(resolved.get('certificatefile') ?? []),
    ];
    if (identities.length > 0) route.identity = identities;
    route.master = (await masterRunning(this.ssh, args, this.host)) ? 'running' : 'not running';
    return { facts: route, warnings: [], problems: [] };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const child of this.children) child.kill('SIGTERM');
  }
}

/** A transport to the profile's host through the system ssh. */
export function createOpensshTransport(options: OpensshTransportOptions): OpensshTransport {
  return new OpensshTransport(options);
}

/** The openssh transport as the registry makes it for a profile and its checked settings, with the schema of those settings. */
export const opensshTransportFactory: TransportFactoryV1<OpensshSettings> = Object.assign(
  (profile: Profile, settings: OpensshSettings) => createOpensshTransport({ profile, settings }),
  { optionsSchema: OpensshTransportOptionsSchema },
);
