/** How many commands a transport runs at once on one host: a bound that shrinks when the server refuses a session (MaxSessions), with a backoff before the retry. */
import { setTimeout as sleep } from 'node:timers/promises';

export class SessionLimit {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private limit: number) {}

  /** Wait for a free session and take it; give it back with `release`. */
  async acquire(): Promise<void> {
    while (this.active >= this.limit)
      await new Promise<void>((resolvePromise) => this.waiters.push(resolvePromise));
    this.active += 1;
  }

  release(): void {
    this.active -= 1;
    this.waiters.shift()?.();
  }

  /** The server refused one more session: use fewer at once, and wait (growing with `attempt`) before retrying. */
  async refused(attempt: number): Promise<void> {
    this.limit = Math.max(1, Math.min(this.limit, this.active - 1 || 1));
    await sleep(Math.min(2_000, 25 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random()));
  }

  /** Sessions in use and the current bound. */
  get state(): { active: number; limit: number } {
    return { active: this.active, limit: this.limit };
  }
}
