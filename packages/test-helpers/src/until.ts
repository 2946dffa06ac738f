/** Waiting for a condition instead of sleeping: the one way tests synchronise with the code. */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Resolve as soon as `condition` holds (checked at once, then every `intervalMs`); throw after
 * `timeoutMs` naming `what`. A condition that throws fails the wait with that error.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  intervalMs = 25,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
