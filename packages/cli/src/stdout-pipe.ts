/** stdout as a pipe whose reader may go away: writes that wait for the reader (backpressure) without holding what they write, and a closed pipe (EPIPE) that ends the command quietly, as coreutils do. */
import { writeSync } from 'node:fs';

/** The exit status of a command whose stdout was closed: 128 + SIGPIPE, the shell's convention. */
export const SIGPIPE_STATUS = 141;

/** A process's stdout, watched. */
export interface StdoutPipe {
  /**
   * Write, resolving once it is written or handed to a stream that can take more (at once when
   * stdout is closed: what is written then is dropped). The caller may reuse `data` after.
   */
  write(data: string | Uint8Array): Promise<void>;
  /** Write without waiting (short output); a closed pipe drops it. */
  send(data: string | Uint8Array): void;
  /** Aborted when the reader has gone (EPIPE, or any other error writing to stdout). */
  readonly closed: AbortSignal;
}

let watched: StdoutPipe | undefined;

/**
 * This process's stdout, watched (one per process). An error writing to it (the reader closed
 * the pipe: `yonder list | head -1`) aborts `closed` instead of crashing with a stack trace.
 * `write` makes the pipe blocking and goes straight to file descriptor 1, as `cat` does: the pipe
 * takes the bytes as fast as its reader reads them and nothing waits in memory; should the
 * descriptor still be non-blocking and full, the rest waits in `process.stdout` for 'drain'.
 * stderr's errors are swallowed: there is nowhere left to report them.
 */
export function watchStdout(): StdoutPipe {
  if (watched) return watched;
  const controller = new AbortController();
  let stream: NodeJS.WriteStream | undefined;
  const streamOf = (): NodeJS.WriteStream => {
    if (!stream) {
      stream = process.stdout;
      stream.on('error', () => controller.abort());
    }
    return stream;
  };
  process.stderr.on('error', () => {});
  const drained = (target: NodeJS.WriteStream): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        target.removeListener('drain', done);
        controller.signal.removeEventListener('abort', done);
        resolve();
      };
      target.once('drain', done);
      controller.signal.addEventListener('abort', done, { once: true });
    });
  let blocking = false;
  /**
   * Make stdout's pipe blocking, as coreutils' is (the `set-blocking` way): a write then waits
   * in the kernel until the reader has taken it, instead of a round of the event loop for every
   * 64 KiB the pipe holds. Node made it non-blocking as soon as anything imported `node:process`.
   */
  const block = (): void => {
    if (blocking) return;
    blocking = true;
    const handle = (streamOf() as { _handle?: { setBlocking?: (on: boolean) => unknown } })._handle;
    handle?.setBlocking?.(true);
  };
  watched = {
    closed: controller.signal,
    send(data) {
      if (!controller.signal.aborted) streamOf().write(data);
    },
    async write(data) {
      if (controller.signal.aborted) return;
      block();
      let bytes = typeof data === 'string' ? Buffer.from(data) : data;
      if (!stream || stream.writableLength === 0) {
        let done = 0;
        try {
          while (done < bytes.length) done += writeSync(1, bytes, done);
          return;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') {
            controller.abort();
            return;
          }
        }
        bytes = bytes.subarray(done);
      }
      const target = streamOf();
      // A copy: once this resolves, the caller may use its buffer again.
      if (!target.write(Buffer.from(bytes))) await drained(target);
    },
  };
  return watched;
}
