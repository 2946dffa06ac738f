/** Buffers that ssh2 makes and drops for every packet, collected while they are still young: what keeps a long streamed read over ssh2 in bounded memory. */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * How many bytes pass between two collections. Following 256 MiB over ssh2 peaked at 111–118 MiB
 * of RSS with none, 86–91 MiB every 8 MiB, 72–75 MiB every 2 MiB, 70–71 MiB every 1 MiB; a
 * scavenge of a young generation this small takes well under a millisecond.
 */
export const COLLECT_EVERY_BYTES = 2 * 1024 * 1024;

type Collect = (options?: { type?: 'minor' | 'major' }) => void;

let collect: Collect | null | undefined;

/**
 * V8's collector, reached the way Jest's `--logHeapUsage` reaches it (`--expose-gc` set at run
 * time, and `gc` taken from a new context, so nothing is added to this one's globals), with the
 * flag cleared again at once; null where that is refused. A process started with `--expose-gc`
 * has it already.
 */
function collector(): Collect | null {
  if (collect !== undefined) return collect;
  const given = (globalThis as { gc?: Collect }).gc;
  if (typeof given === 'function') {
    collect = given;
    return collect;
  }
  try {
    // A host process may have set the flag itself: then it is left on.
    const wasOn = runInNewContext('typeof gc') === 'function';
    if (!wasOn) setFlagsFromString('--expose-gc');
    try {
      const found: unknown = runInNewContext('gc');
      collect = typeof found === 'function' ? (found as Collect) : null;
    } finally {
      // And off again: no context a host process makes later (a `vm` sandbox) is given `gc`.
      if (!wasOn) setFlagsFromString('--no-expose-gc');
    }
  } catch {
    collect = null;
  }
  return collect;
}

let since = 0;

/**
 * Count bytes that came in new buffers ssh2 made (a decrypted packet, a socket read) and that are
 * dropped once written; after every COLLECT_EVERY_BYTES, a minor collection (a scavenge, about a
 * millisecond however large the rest of the heap). Without it the dead buffers wait for a
 * collection V8 starts only after about 64 MiB of memory outside its heap was allocated since
 * the last: tens of MiB of garbage throughout a long read. A scavenge frees only young objects,
 * so a host process's old generation is never walked.
 */
export function passedThrough(bytes: number): void {
  since += bytes;
  if (since < COLLECT_EVERY_BYTES) return;
  since = 0;
  try {
    collector()?.({ type: 'minor' });
  } catch {
    // A host's own `gc` that throws: the bytes matter, the collection does not.
    collect = null;
  }
}
