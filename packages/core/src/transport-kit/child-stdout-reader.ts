/** A child's stdout read into one buffer of ours, used again once each chunk is taken, instead of a new buffer for every pipe read: gigabytes of log go by without leaving garbage for the collector. */
import { read } from 'node:fs';
import type { Readable } from 'node:stream';

/** Bytes per read: what a pipe holds. */
const READ_BYTES = 64 * 1024;

/** The parts of Node's pipe handle used here (as `setBlocking` is used on stdout). */
interface PipeHandle {
  fd?: number;
  readStop?: () => number;
  setBlocking?: (on: boolean) => number;
}

/**
 * Read `stdout` (a child process's pipe) ourselves: each chunk goes to `take`, and the next read
 * starts only once the promise `take` returned (if any) has settled, so `take` must copy what it
 * keeps past that. At the end of the pipe (or an error) the stream is destroyed, so the child's
 * 'close' comes as usual. Returns false, having done nothing, when the pipe's handle does not
 * allow it (then read it as a stream).
 */
export function readChildStdout(
  stdout: Readable,
  take: (chunk: Buffer) => Promise<void> | undefined,
): boolean {
  const handle = (stdout as Readable & { _handle?: PipeHandle })._handle;
  const fd = handle?.fd;
  if (typeof fd !== 'number' || fd < 0 || !handle?.readStop || !handle.setBlocking) return false;
  // Node started reading the pipe when it made the stream: stop that (nothing has been read
  // yet, in this same tick), and read it blocking, in the thread pool, into our buffer.
  if (handle.readStop() !== 0 || handle.setBlocking(true) !== 0) return false;
  // And never again: the child's exit resumes a stdout nobody listens to, which would read
  // (and drop) what the pipe still holds.
  stdout._read = () => {};
  const buffer = Buffer.allocUnsafe(READ_BYTES);
  const next = (): void => {
    read(fd, buffer, 0, buffer.length, null, (error, bytes) => {
      if (error || bytes === 0) {
        stdout.destroy();
        return;
      }
      const busy = take(buffer.subarray(0, bytes));
      if (busy) busy.then(next, next);
      else next();
    });
  };
  next();
  return true;
}
