/** The buffers a log is read into on this machine, used again once written: gigabytes of log go by without gigabytes of garbage for the collector. */

/** How many free buffers are kept: a chunk being written and two being read, and one spare. */
const KEPT = 4;

/** Smaller reads are not worth keeping buffers for. */
const SMALL = 64 * 1024;

const free: Buffer[] = [];
/** The memory of the buffers handed out here: only these are ever taken back. */
const ours = new WeakSet<ArrayBufferLike>();

/**
 * A buffer of exactly `size` bytes, not zeroed (it is filled from the file before anyone sees
 * it): a free one of that size if there is one, else a new one. Small ones come from Node's
 * own pool and are never taken back.
 */
export function takeLogBuffer(size: number): Buffer {
  if (size < SMALL) return Buffer.allocUnsafe(size);
  const index = free.findIndex((buffer) => buffer.length === size);
  if (index >= 0) return free.splice(index, 1)[0] as Buffer;
  const buffer = Buffer.allocUnsafeSlow(size);
  ours.add(buffer.buffer);
  return buffer;
}

/**
 * Take back the memory of `data` (a chunk whose write has resolved) if it was handed out by
 * `takeLogBuffer`; anything else is left alone.
 */
export function recycleLogBuffer(data: Buffer): void {
  if (!ours.has(data.buffer) || data.byteOffset !== 0) return;
  const whole = Buffer.from(data.buffer, 0, data.buffer.byteLength);
  if (free.some((buffer) => buffer.buffer === whole.buffer)) return;
  if (free.length >= KEPT) free.shift();
  free.push(whole);
}
