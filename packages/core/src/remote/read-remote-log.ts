/** The one reader of a job's log file on its target, shared by every backend: a fixed sh script that returns raw bytes with byte offsets (or, on this machine, the file read directly). */
import { recycleLogBuffer, takeLogBuffer } from '../backend/local/log-buffers.js';
import { missingLog, readLogFile } from '../backend/local/read-log-file.js';
import { YonderError } from '../errors/yonder-error.js';
import type { LogChunkV1, ReadLogOptionsV1 } from '../spec/backend/v1/backend-v1.js';
import type { RunResultV1, TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { PRIVATE_DIRECTORY_FUNCTIONS } from './job-directory-functions.js';

/** What a read returns when `maxBytes` is not given. */
export const DEFAULT_LOG_READ_BYTES = 1024 * 1024;

/** The first chunk the backward scan for `tailLines` reads; each next one is twice as large, up to 64 MiB. */
export const DEFAULT_LOG_SCAN_BYTES = 64 * 1024;

/**
 * Read part of a log: $1 path, $2 `offset`, `bytes` or `lines`, $3 the offset or count, $4 the
 * most bytes to return, $5 the first chunk of the backward scan. Prints `MISSING`, or
 * `LOG <size> <start> <count>` and then exactly `count` bytes of the file from `start`. The
 * size is read first and nothing past it is looked at, so bytes the job appends meanwhile are
 * left for the next read. `lines` reads backwards from the end in chunks that double in size,
 * counting newlines, until the chunk that holds the start of the last N lines; there `tail -n`
 * (POSIX, byte-exact) finds it, on the chunk with one byte that is not a newline added, so a
 * final line without a newline counts as `tail -n` counts it. `LC_ALL=C`: bytes, not characters.
 * The log is read only inside a private job directory of the user's, entered and checked, by
 * its relative name and never through a link (exit 23 otherwise): a log another user put in its
 * place is not shown.
 */
export const READ_LOG_SCRIPT = `LC_ALL=C; export LC_ALL
f=$1; mode=$2; n=$3; max=$4; step=$5
if [ ! -e "$f" ] && [ ! -L "$f" ]; then echo MISSING; exit 0; fi
me=$(id -u)
${PRIVATE_DIRECTORY_FUNCTIONS}
dir=\${f%/*}; name=\${f##*/}
private_dirs 1 "\${dir:-/}"
if ! enter_private "\${dir:-/}"; then
  echo "yonder: refusing to read $f: \${dir:-/} is not a private job directory of yours (a real directory, mode 0700, not a link)" >&2; exit 23
fi
f=./$name
if [ -L "$f" ] || [ ! -f "$f" ]; then echo "yonder: refusing to read $1: it is not a regular file (a link, or something else)" >&2; exit 23; fi
[ -r "$f" ] || { echo "yonder: cannot read $1" >&2; exit 1; }
size=$(( $(wc -c < "$f") ))
piece() { tail -c +"$(($1 + 1))" -- "$f" | head -c "$2"; }
case $mode in
  offset) start=$(( n < size ? n : size )) ;;
  bytes) start=$(( n < size ? size - n : 0 )) ;;
  lines)
    end=$size; need=$n; start=0
    if [ "$end" -gt 0 ] && [ $(( $(piece $((end - 1)) 1 | wc -l) )) -eq 1 ]; then end=$((end - 1)); fi
    [ "$need" -gt 0 ] || start=$size
    while [ "$need" -gt 0 ] && [ "$end" -gt 0 ]; do
      from=$(( end > step ? end - step : 0 ))
      found=$(( $(piece "$from" $((end - from)) | tr -cd '\\n' | wc -c) ))
      if [ "$found" -ge "$need" ]; then
        after=$(( $( { piece "$from" $((end - from)); printf x; } | tail -n "$need" | wc -c) ))
        start=$((end - after + 1)); break
      fi
      need=$((need - found)); end=$from
      [ "$step" -ge 67108864 ] || step=$((step * 2))
    done ;;
  *) echo "yonder: unknown mode $mode" >&2; exit 2 ;;
esac
count=$(( size - start < max ? size - start : max ))
printf 'LOG %s %s %s\\n' "$size" "$start" "$count"
[ "$count" -eq 0 ] || piece "$start" "$count"
`;

const HEADER = /^LOG (\d+) (\d+) (\d+)$/;

/** The pieces a streamed read hands over: the transport's packets gathered, so each write is large. */
export const LOG_PIECE_BYTES = 1024 * 1024;

/** A streamed read may take long when its reader is slow: the command's own limit, past which it goes on by a new read. */
const STREAM_TIMEOUT_MS = 600_000;

function unavailable(log: string, detail: string, cause?: unknown): YonderError {
  return new YonderError(
    'E_LOG_UNAVAILABLE',
    `Could not read ${log}: ${detail}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * The bytes a command run with `encoding: 'buffer'` printed.
 * @throws YonderError `E_LOG_UNAVAILABLE` when the transport returned text instead: a log is
 *   read byte for byte, never decoded and encoded again.
 */
export function outputBytes(transport: TransportV1, result: RunResultV1, log: string): Buffer {
  if (result.stdoutBytes instanceof Buffer) return result.stdoutBytes;
  throw unavailable(
    log,
    `the ${transport.id} transport returned no bytes (it must honour RunOptionsV1.encoding 'buffer': a log is read byte for byte)`,
  );
}

/**
 * Read a log by READ_LOG_SCRIPT through any transport, as bytes (`encoding: 'buffer'`).
 * `scanBytes` is the first chunk of the backward scan for `tailLines` (tests make it small).
 * @throws YonderError `E_LOG_UNAVAILABLE` when the log cannot be read or the transport cannot
 *   return bytes; what the transport throws when the target cannot be reached.
 */
export async function readLogByScript(
  transport: TransportV1,
  log: string,
  options: ReadLogOptionsV1,
  scanBytes = DEFAULT_LOG_SCAN_BYTES,
): Promise<LogChunkV1> {
  const maxBytes = Math.max(0, Math.floor(options.maxBytes ?? DEFAULT_LOG_READ_BYTES));
  const [mode, amount] =
    options.offset !== undefined
      ? ['offset', options.offset]
      : options.tailLines !== undefined
        ? ['lines', options.tailLines]
        : options.tailBytes !== undefined
          ? ['bytes', options.tailBytes]
          : ['offset', 0];
  const args = [
    log,
    mode,
    String(Math.max(0, Math.floor(amount))),
    String(maxBytes),
    String(scanBytes),
  ];
  if (options.onData && transport.streamsStdout)
    return streamLogByScript(transport, log, args, options.onData);
  const result = await transport.runScript(READ_LOG_SCRIPT, args, {
    timeoutMs: 120_000,
    encoding: 'buffer',
    maxOutputBytes: maxBytes + 128,
  });
  const out = outputBytes(transport, result, log);
  if (result.exitCode !== 0) {
    throw unavailable(
      log,
      (result.stderr || out.toString('utf8')).trim().slice(-500) ||
        `exit status ${result.exitCode ?? result.signal}`,
    );
  }
  const newline = out.indexOf(0x0a);
  const head = out.subarray(0, Math.max(newline, 0)).toString('latin1');
  if (head === 'MISSING') return missingLog(log);
  const header = HEADER.exec(head);
  if (!header) {
    throw unavailable(log, `unexpected answer ${JSON.stringify(out.subarray(0, 200).toString())}`);
  }
  const [size, start, count] = [Number(header[1]), Number(header[2]), Number(header[3])];
  const data = out.subarray(newline + 1);
  if (data.length !== count || result.stdoutTruncated) {
    // The file shrank while it was read (or the transport cut the output): never a silent gap.
    throw unavailable(log, `expected ${count} bytes from offset ${start}, got ${data.length}`);
  }
  return { exists: true, data, start, offset: start + count, size };
}

/**
 * READ_LOG_SCRIPT through a transport that streams stdout: its bytes go to `onData` in pieces of
 * LOG_PIECE_BYTES (one buffer, used again once each is written) while the command runs, held
 * back while a piece is written. A read cut short after some pieces (its time limit passed
 * while the reader was slow, the connection dropped) returns where it got to: the next read
 * goes on from there, or fails in its turn.
 */
async function streamLogByScript(
  transport: TransportV1,
  log: string,
  args: readonly string[],
  onData: (piece: LogChunkV1) => Promise<void>,
): Promise<LogChunkV1> {
  let head = Buffer.alloc(0);
  let header: { size: number; start: number; count: number } | undefined;
  let missing = false;
  let delivered = 0;
  let piece: Buffer | undefined;
  let filled = 0;
  let failed: unknown;
  // Once the read has ended (or been cut short), what the transport still hands over is not
  // taken; and the piece being written is waited for before the buffer is used again.
  let done = false;
  let inFlight: Promise<void> = Promise.resolve();
  const flush = async (): Promise<void> => {
    if (!header || !piece || filled === 0) return;
    const start = header.start + delivered;
    const data = piece.subarray(0, filled);
    const size = header.size;
    const written = (async () => {
      try {
        await onData({ exists: true, data, start, offset: start + data.length, size });
      } catch (error) {
        failed = error;
        throw error;
      }
      // Counted once written: a read cut short goes on from the last byte really handed over.
      delivered += data.length;
      filled = 0;
    })();
    inFlight = written.catch(() => undefined);
    await written;
  };
  const take = (chunk: Buffer): Promise<void> | undefined => {
    if (done || missing) return undefined;
    if (!header) {
      head = Buffer.concat([head, chunk]);
      const newline = head.indexOf(0x0a);
      if (newline < 0) {
        if (head.length > 200)
          throw unavailable(log, `unexpected answer ${JSON.stringify(head.toString())}`);
        return undefined;
      }
      const line = head.subarray(0, newline).toString('latin1');
      const rest = head.subarray(newline + 1);
      head = Buffer.alloc(0);
      if (line === 'MISSING') {
        missing = true;
        return undefined;
      }
      const match = HEADER.exec(line);
      if (!match) throw unavailable(log, `unexpected answer ${JSON.stringify(line.slice(0, 200))}`);
      header = { size: Number(match[1]), start: Number(match[2]), count: Number(match[3]) };
      piece = takeLogBuffer(Math.min(LOG_PIECE_BYTES, Math.max(1, header.count)));
      chunk = rest;
    }
    const into = piece as Buffer;
    let at = 0;
    while (at < chunk.length) {
      const copied = chunk.copy(into, filled, at);
      filled += copied;
      at += copied;
      if (filled === into.length) {
        const rest = chunk.subarray(at);
        return flush().then(() => (rest.length > 0 ? take(rest) : undefined));
      }
    }
    return undefined;
  };
  try {
    let result: RunResultV1;
    try {
      result = await transport.runScript(READ_LOG_SCRIPT, args, {
        timeoutMs: STREAM_TIMEOUT_MS,
        encoding: 'buffer',
        onStdout: take,
      });
    } catch (error) {
      done = true;
      await inFlight;
      if (failed !== undefined && error === failed) throw error;
      // Cut short after some pieces: go on from where it got to.
      if (header && delivered > 0)
        return { exists: true, data: Buffer.alloc(0), ...span(header, delivered) };
      throw error;
    }
    if (result.exitCode !== 0) {
      throw unavailable(
        log,
        result.stderr.trim().slice(-500) || `exit status ${result.exitCode ?? result.signal}`,
      );
    }
    if (missing) return missingLog(log);
    if (!header) throw unavailable(log, 'no answer');
    await flush();
    if (delivered !== header.count) {
      // The file shrank while it was read: never a silent gap.
      throw unavailable(
        log,
        `expected ${header.count} bytes from offset ${header.start}, got ${delivered}`,
      );
    }
    return { exists: true, data: Buffer.alloc(0), ...span(header, delivered) };
  } finally {
    done = true;
    await inFlight;
    if (piece) recycleLogBuffer(piece);
  }
}

/** The offsets of a streamed read that handed over `delivered` bytes. */
function span(
  header: { size: number; start: number },
  delivered: number,
): { start: number; offset: number; size: number } {
  return { start: header.start, offset: header.start + delivered, size: header.size };
}

/**
 * Read a job's log on its target through its transport, as bytes with byte offsets (see
 * `ReadLogOptionsV1`). On this machine (the `local` transport) a read from an offset, the
 * whole of `--follow`, reads the file directly; every other read runs READ_LOG_SCRIPT. A log
 * that does not exist yet is not an error.
 * @throws YonderError `E_LOG_UNAVAILABLE` when the log cannot be read; what the transport
 *   throws (`E_TRANSPORT`, `E_TIMEOUT`) when the target cannot be reached.
 */
export async function readRemoteLog(
  transport: TransportV1,
  log: string,
  options: ReadLogOptionsV1,
): Promise<LogChunkV1> {
  if (!log) throw new YonderError('E_LOG_UNAVAILABLE', 'This job has no log path recorded.');
  if (transport.id === 'local' && options.offset !== undefined) return readLogFile(log, options);
  return readLogByScript(transport, log, options);
}
