/** The one way both ssh transports run a command on a host, whatever the user's login shell and whatever its startup files print: `exec /bin/sh -s` as the command, the quoted argv on stdin, the answer read after unique markers. */
import { randomBytes } from 'node:crypto';
import { shJoin } from '../shell/sh-quote.js';
import type { RunOptionsV1 } from '../spec/transport/v1/transport-v1.js';
import { BoundedBuffer } from '../transport/local-transport.js';

export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024;

/**
 * The command line sent to the server. sshd runs it with the user's login shell (`$SHELL -c`),
 * and every shell (sh, bash, dash, zsh, ksh, fish, csh, tcsh) reads these three words alike: no
 * quote, `$`, `!` or newline for any of them to take differently.
 */
export const REMOTE_COMMAND = 'exec /bin/sh -s';

/** The line the launcher prints, with exit 127, when the program to run does not exist there. */
export const NOT_FOUND_MARK = 'yonder-transport: no such program: ';

/**
 * Runs the real command on the far side under a time limit of its own (`timeout -k`), so a
 * command we gave up on does not live on holding a session slot, and ends stderr with its exit
 * status after the end mark (an EXIT trap: every way out of the script). `$1` is the end mark,
 * `$2` the limit in seconds, `$3` the variable-name prefixes to remove (space-separated), `$4`
 * the program (checked to exist, else NOT_FOUND_MARK and exit 127), the rest the command.
 */
const LAUNCHER = [
  'end=$1; t=$2; prefixes=$3; prog=$4; shift 4',
  `trap 's=$?; printf "\\n%s %s\\n" "$end" "$s" >&2; exit "$s"' EXIT`,
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
  'if command -v timeout >/dev/null 2>&1; then timeout -k 5 "$t" "$@"; else "$@"; fi',
].join('\n');

/** One command as it goes to the far side: the first line of stdin, and the marks to read its answer by. */
export interface RemoteInvocation {
  /** The command line for the server: always REMOTE_COMMAND. */
  readonly command: string;
  /** What goes first on stdin: one complete sh command, ending in a newline, that execs the launcher. */
  readonly head: Buffer;
  /** Printed on stdout and on stderr, each on a line of its own, before the command starts. */
  readonly startMark: string;
  /** Starts stderr's last line, with the exit status after it. */
  readonly endMark: string;
  /** The program run (`argv[0]`), for messages. */
  readonly argv0: string;
  /** The caller's options. */
  readonly options: RunOptionsV1;
}

/**
 * The invocation of one argv. The head prints the start mark (built at run time from two words, so
 * that no echo of the command itself can be taken for it) on stdout and stderr, then `exec`s the
 * launcher: being one complete command, sh reads nothing of stdin after it, and the rest of stdin
 * is the command's own. (dash reads ahead of what it executes, so the caller's input is sent
 * only once the start mark has arrived: `RemoteAnswer.started`.)
 */
export function remoteInvocation(argv: readonly string[], options: RunOptionsV1): RemoteInvocation {
  const id = randomBytes(9).toString('hex');
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
  const endMark = `yonder-end-${id}`;
  const launcher = shJoin([
    '/bin/sh',
    '-c',
    LAUNCHER,
    'yonder',
    endMark,
    String(seconds),
    (options.unsetEnvPrefixes ?? []).join(' '),
    argv[0] as string,
    ...cwd,
    ...prefix,
    ...argv,
  ]);
  const mark = `printf '%s-%s\\n' yonder-start ${id}`;
  return {
    command: REMOTE_COMMAND,
    head: Buffer.from(`${mark}; ${mark} >&2; exec ${launcher}\n`),
    startMark: `yonder-start-${id}\n`,
    endMark,
    argv0: argv[0] as string,
    options,
  };
}

/** Drops what comes before a mark line (startup files, banners, motd), keeping a bounded tail of it for diagnostics. */
class AfterMark {
  found = false;
  private window = Buffer.alloc(0);
  readonly before = new BoundedBuffer(4096, 'tail');
  constructor(
    private readonly mark: Buffer,
    private readonly sink: (chunk: Buffer) => void,
  ) {}

  push(chunk: Buffer): boolean {
    if (this.found) {
      this.sink(chunk);
      return false;
    }
    const joined = Buffer.concat([this.window, chunk]);
    const at = joined.indexOf(this.mark);
    if (at < 0) {
      const keep = Math.max(0, joined.length - (this.mark.length - 1));
      this.before.push(joined.subarray(0, keep));
      this.window = joined.subarray(keep);
      return false;
    }
    this.found = true;
    this.before.push(joined.subarray(0, at));
    this.window = Buffer.alloc(0);
    const rest = joined.subarray(at + this.mark.length);
    if (rest.length > 0) this.sink(rest);
    return true;
  }

  /** Everything seen when the mark never came. */
  text(): string {
    return Buffer.concat([this.before.bytes(), this.window]).toString('utf8');
  }
}

/** The answer of one invocation as it arrives: stdout and stderr after their start marks, bounded, and the exit status from stderr's last line. */
export class RemoteAnswer {
  private readonly out: BoundedBuffer;
  private readonly err: BoundedBuffer;
  private readonly stdout: AfterMark;
  private readonly stderr: AfterMark;
  private readonly waiting: Array<() => void> = [];
  /** Where stdout goes as it comes (`onStdout`), instead of being kept. */
  private readonly sink: ((chunk: Buffer) => void | Promise<void>) | undefined;
  /** The sink's answer still pending: no more is read until it settles. */
  private pending: Promise<void> | undefined;
  /** What the sink threw, once it has: the command is stopped and fails with it. */
  private failure: { error: unknown } | undefined;

  constructor(private readonly invocation: RemoteInvocation) {
    const { options } = invocation;
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
    this.out = new BoundedBuffer(limit, 'head');
    // Room for the end line besides the caller's limit.
    this.err = new BoundedBuffer(limit + invocation.endMark.length + 24, 'tail');
    this.sink = options.encoding === 'buffer' ? options.onStdout : undefined;
    const mark = Buffer.from(invocation.startMark);
    this.stdout = new AfterMark(mark, (chunk) =>
      this.sink ? this.deliver(chunk) : this.out.push(chunk),
    );
    this.stderr = new AfterMark(mark, (chunk) => this.err.push(chunk));
  }

  /**
   * Take bytes of stdout. With `onStdout`, a promise while the caller is busy with them: the
   * transport reads no more until it settles (pause the stream, resume after).
   */
  pushStdout(chunk: Buffer): Promise<void> | undefined {
    if (this.stdout.push(chunk)) for (const wake of this.waiting.splice(0)) wake();
    return this.pending;
  }

  /** Hand a piece of stdout to the sink, after any still pending (in order, whatever the transport does). */
  private deliver(chunk: Buffer): void {
    if (this.failure) return;
    const call = (): void | Promise<void> => {
      try {
        return (this.sink as (chunk: Buffer) => void | Promise<void>)(chunk);
      } catch (error) {
        this.failure = { error };
        return undefined;
      }
    };
    const answer = this.pending ? this.pending.then(call) : call();
    if (!answer) return;
    const settled: Promise<void> = answer.then(
      () => {
        if (this.pending === settled) this.pending = undefined;
      },
      (error: unknown) => {
        this.failure ??= { error };
        if (this.pending === settled) this.pending = undefined;
      },
    );
    this.pending = settled;
  }

  /** Whether the sink failed: the transport stops the command. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /**
   * Resolves once the sink has taken all of stdout (at once without one); rejects with what the
   * sink threw. The transport waits for this before the command's result.
   */
  async delivered(): Promise<void> {
    while (this.pending) await this.pending;
    if (this.failure) throw this.failure.error;
  }

  pushStderr(chunk: Buffer): void {
    this.stderr.push(chunk);
  }

  /** Whether sh started on the far side (the start mark arrived on stdout). */
  get started(): boolean {
    return this.stdout.found;
  }

  /** Resolves once the start mark has arrived on stdout (never, when it does not). */
  whenStarted(): Promise<void> {
    if (this.started) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** What stdout and stderr held when sh never started (the login shell's or ssh's own words). */
  preamble(): string {
    return `${this.stdout.text()}${this.stderr.text()}`.trim();
  }

  /** The command's stderr without the end line, and the exit status that line gave (null without one). */
  private ending(): { stderr: Buffer; status: number | null } {
    const bytes = this.err.bytes();
    const text = bytes.toString('latin1');
    const match = new RegExp(`\\n${this.invocation.endMark} (\\d+)\\n$`).exec(text);
    if (!match) return { stderr: bytes, status: null };
    return { stderr: bytes.subarray(0, match.index), status: Number(match[1]) };
  }

  /** The exit status the launcher reported, or null when the command did not finish on its own. */
  get status(): number | null {
    return this.ending().status;
  }

  /** The result fields of the answer, as RunResultV1 has them. */
  result(): {
    stdout: string;
    stdoutBytes?: Buffer;
    stderr: string;
    stdoutTruncated: boolean;
    stderrTruncated: boolean;
  } {
    const { stderr } = this.ending();
    const limit = this.invocation.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
    const kept = stderr.length > limit ? stderr.subarray(stderr.length - limit) : stderr;
    const bytes = this.invocation.options.encoding === 'buffer';
    return {
      stdout: bytes ? '' : this.out.text(),
      ...(bytes ? { stdoutBytes: this.out.bytes() } : {}),
      stderr: kept.toString('utf8'),
      stdoutTruncated: this.out.truncated,
      stderrTruncated: this.err.truncated || kept.length < stderr.length,
    };
  }
}

/**
 * Feed stdin: the head at once, then the caller's input once sh has started (never earlier:
 * dash may read ahead of the command it runs, and would swallow it), then end it.
 */
export async function feedInput(
  answer: RemoteAnswer,
  invocation: RemoteInvocation,
  write: (chunk: Buffer) => void,
  end: () => void,
): Promise<void> {
  write(invocation.head);
  const input = invocation.options.input;
  if (input !== undefined && input.length > 0) {
    await answer.whenStarted();
    write(typeof input === 'string' ? Buffer.from(input) : input);
  }
  end();
}
