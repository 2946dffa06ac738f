import type { JsonValue } from '../../../json/json-value.js';

/** Options for one command run through a transport. */
export interface RunOptionsV1 {
  /** Written to the command's stdin, then stdin is closed. Without it stdin is empty. */
  input?: string | Buffer;
  /** Kill the command after this long. Remote transports also bound it on the far side. Default 60 s. */
  timeoutMs?: number;
  /** Keep at most this many bytes of each of stdout and stderr (the rest is counted, not kept). Default 8 MiB. */
  maxOutputBytes?: number;
  /** Environment variables to set; `unsetEnv` names ones to remove (for sanitising). */
  env?: Record<string, string>;
  unsetEnv?: readonly string[];
  /** Remove every variable whose name starts with one of these prefixes. */
  unsetEnvPrefixes?: readonly string[];
  cwd?: string;
  signal?: AbortSignal;
  /**
   * How stdout comes back: `'utf8'` (the default) decodes it into `stdout`; `'buffer'` returns
   * the bytes exactly as the command wrote them in `stdoutBytes`, never decoded (`stdout` is then
   * empty). Logs are read this way: a job's output need not be UTF-8. stderr is always text.
   */
  encoding?: 'utf8' | 'buffer';
  /**
   * With `encoding: 'buffer'`, on a transport whose `streamsStdout` is true: stdout's bytes are
   * handed here in order as they arrive instead of being kept (`stdoutBytes` is then empty and
   * `maxOutputBytes` does not apply to them). While a promise it returned is pending nothing more
   * is read: the command waits (backpressure), so memory stays bounded whatever the caller's pace.
   * The command's result comes only after the last call has settled; if one rejects, the command
   * is stopped and `run` rejects with that error. A chunk's memory is the transport's: copy what
   * you keep. Transports without `streamsStdout` ignore it.
   */
  onStdout?: (chunk: Buffer) => void | Promise<void>;
}

/** What a finished command produced. A non-zero exit is a result, not an exception. */
export interface RunResultV1 {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  /** With `encoding: 'buffer'`: stdout's bytes as written (at most `maxOutputBytes`). */
  stdoutBytes?: Buffer;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
}

/** What a transport says about how it reaches its host, for `yonder profile check`. */
export interface TransportDescriptionV1 {
  /** Facts, e.g. `{ "transport": "ssh2", "route": [{ "hostname": …, "port": 22 }] }`. */
  readonly facts: { readonly [key: string]: JsonValue | undefined };
  /** Settings it does not honour and ignores: shown to the user, not failures. */
  readonly warnings: readonly string[];
  /** What makes the host unreachable as configured (the check fails). */
  readonly problems: readonly string[];
}

/**
 * How a host is reached. Never a local shell: `run` takes argv. `runScript`
 * runs a fixed POSIX sh script with its values as positional parameters
 * (`$1`…), so no value is ever parsed by a shell.
 */
export interface TransportV1 {
  readonly specificationVersion: 'v1';
  /** The transport's registry id (`local`, or a plugin's). */
  readonly id: string;
  /** A stable description of the host reached, for grouping and messages. */
  readonly target: string;
  /** True when `run` and `runScript` honour `RunOptionsV1.onStdout` (stream stdout as it comes). */
  readonly streamsStdout?: boolean;
  /**
   * Run one program with arguments.
   * @throws YonderError `E_COMMAND_NOT_FOUND` when the program does not exist,
   *   `E_TIMEOUT` when the time limit passed, `E_TRANSPORT` when the host cannot be reached.
   */
  run(argv: readonly string[], options?: RunOptionsV1): Promise<RunResultV1>;
  /**
   * Run a fixed `sh` script; `args` become `$1`, `$2`… and are never interpolated.
   * @throws YonderError as for `run`.
   */
  runScript(script: string, args: readonly string[], options?: RunOptionsV1): Promise<RunResultV1>;
  /**
   * Optional: the route to the host and what the transport cannot honour of its settings,
   * found without running anything on the host.
   * @throws YonderError when the settings cannot be read at all (e.g. a missing config file).
   */
  describe?(): Promise<TransportDescriptionV1>;
  /** Release connections. Safe to call twice. */
  close(): Promise<void>;
  /**
   * Optional, for transports that keep a login (the openssh transport's master connection):
   * open it now, letting the login ask a person on the terminal (`'inherit'`) or through the
   * program's own helpers (SSH_ASKPASS) whatever it needs. Other calls never ask.
   * @throws YonderError `E_LOGIN_REQUIRED` when the login failed, `E_TRANSPORT` otherwise.
   */
  login?(stdio?: 'inherit' | 'pipe'): Promise<{ alreadyConnected: boolean }>;
  /** Optional: close the kept login. Resolves with false when none was open. */
  logout?(): Promise<boolean>;
}
