/** The one loop behind `wait`, `logs --follow` and `cancel --wait`: rounds separated by pauses that grow to a ceiling, until done, a deadline or an abort. */
import { setTimeout as timer } from 'node:timers/promises';

/** How the pauses between two rounds grow. */
export interface Backoff {
  /** The first pause, in ms. */
  readonly initialMs: number;
  /** Each pause is the previous one times this (at least 1). */
  readonly factor: number;
  /** The longest pause, in ms. */
  readonly maxMs: number;
}

/** Time as the loop sees it: injectable, so tests drive it without waiting. */
export interface Clock {
  /** Milliseconds on a clock that only moves forward (only differences are used). */
  now(): number;
  /** Resolve after `ms`, or as soon as `signal` aborts (never rejects for that). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * What one round found: `done` ends the loop; `progress` runs the next round at once with the
 * pauses back at their start (e.g. output arrived); `idle` pauses before the next round.
 */
export type RoundResult = 'done' | 'progress' | 'idle';

/** Why the loop ended. */
export type LoopOutcome = 'done' | 'deadline' | 'aborted';

export interface WaitLoopOptions {
  readonly backoff: Backoff;
  readonly clock: Clock;
  /** Stop after the first round that ends at or past this time (`clock.now()` ms). Default: never. */
  readonly deadline?: number;
  /** Stop as soon as this aborts: a pause in progress is cut short; a round in progress finishes. */
  readonly signal?: AbortSignal;
  /** The ceiling for the next pause, asked before each one (e.g. from the jobs' poll interval). Default `backoff.maxMs`. */
  readonly ceilingMs?: () => number;
}

/** A timer that resolves early, without an error, when the signal aborts. */
export async function timerSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  try {
    await timer(ms, undefined, signal ? { signal } : {});
  } catch (error) {
    if (!signal?.aborted) throw error;
  }
}

/** The real clock: monotonic, so a wall clock stepped back or forward changes no deadline. */
export const SYSTEM_CLOCK: Clock = { now: () => performance.now(), sleep: timerSleep };

/**
 * Run `round` until it says `done`, the deadline passes or the signal aborts. The first round
 * runs at once, whatever the signal; the deadline and the signal are checked after each round
 * that is not done, and the signal again after each pause. No pause exceeds the ceiling or the
 * time left before the deadline.
 */
export async function waitLoop(
  round: () => Promise<RoundResult>,
  options: WaitLoopOptions,
): Promise<LoopOutcome> {
  const { backoff, clock, signal } = options;
  const deadline = options.deadline ?? Number.POSITIVE_INFINITY;
  const factor = Math.max(1, backoff.factor);
  let delay = Math.max(0, backoff.initialMs);
  for (;;) {
    const result = await round();
    if (result === 'done') return 'done';
    if (signal?.aborted) return 'aborted';
    if (clock.now() >= deadline) return 'deadline';
    if (result === 'progress') {
      delay = Math.max(0, backoff.initialMs);
      continue;
    }
    const ceiling = Math.max(0, options.ceilingMs?.() ?? backoff.maxMs);
    const pause = Math.max(0, Math.min(delay, ceiling, deadline - clock.now()));
    await clock.sleep(pause, signal);
    if (signal?.aborted) return 'aborted';
    delay = Math.min(delay * factor, ceiling);
  }
}
