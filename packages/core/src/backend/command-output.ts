/** What scheduler backends need about the commands they run on a target: a failure's words, and bounded command lines. */
import type { RunResultV1 } from '../spec/transport/v1/transport-v1.js';

/** What a failed command said (the end of stderr, else of stdout: 1200 characters), or its exit status. */
export function commandFailure(result: RunResultV1): string {
  const text = (result.stderr.trim() || result.stdout.trim()).slice(-1200);
  return text || `exit status ${result.exitCode ?? result.signal}`;
}

/** Items in runs of at most `size`, for command lines of bounded length (job ids per qdel, scancel…). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let index = 0; index < items.length; index += size)
    out.push(items.slice(index, index + size));
  return out;
}
