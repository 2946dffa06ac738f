import { describe, expect, it } from 'vitest';
import { type Backoff, type Clock, type RoundResult, timerSleep, waitLoop } from './wait-loop.js';

const BACKOFF: Backoff = { initialMs: 200, factor: 1.5, maxMs: 1000 };

/** A clock whose pauses take no time: each records its length and moves time on by it. */
function fakeClock(start = 1_000_000): Clock & { pauses: number[]; time: number } {
  const clock = {
    time: start,
    pauses: [] as number[],
    now: () => clock.time,
    async sleep(ms: number) {
      clock.pauses.push(ms);
      clock.time += ms;
    },
  };
  return clock;
}

/** Rounds that answer from a script, then `done`; counts how many ran. */
function scripted(results: RoundResult[]): {
  round: () => Promise<RoundResult>;
  runs: () => number;
} {
  let runs = 0;
  return {
    round: async () => results[runs++] ?? 'done',
    runs: () => runs,
  };
}

describe('waitLoop', () => {
  it('pauses from the initial delay, growing by the factor up to the ceiling', async () => {
    const clock = fakeClock();
    const rounds = scripted(Array(7).fill('idle'));
    expect(await waitLoop(rounds.round, { backoff: BACKOFF, clock })).toBe('done');
    expect(clock.pauses).toEqual([200, 300, 450, 675, 1000, 1000, 1000]);
    expect(rounds.runs()).toBe(8);
  });

  it('asks for the ceiling before each pause', async () => {
    const clock = fakeClock();
    const ceilings = [5000, 5000, 5000, 250, 250];
    let asked = 0;
    const rounds = scripted(Array(5).fill('idle'));
    await waitLoop(rounds.round, {
      backoff: BACKOFF,
      clock,
      ceilingMs: () => ceilings[asked++] ?? 250,
    });
    expect(asked).toBe(5);
    expect(clock.pauses).toEqual([200, 300, 450, 250, 250]);
  });

  it('runs again at once after progress, with the pauses back at their start', async () => {
    const clock = fakeClock();
    const rounds = scripted(['idle', 'idle', 'idle', 'progress', 'progress', 'idle']);
    await waitLoop(rounds.round, { backoff: BACKOFF, clock });
    expect(clock.pauses).toEqual([200, 300, 450, 200]);
  });

  it('never sleeps past the deadline, and ends there after one last round', async () => {
    const clock = fakeClock();
    const start = clock.time;
    const rounds = scripted(Array(100).fill('idle'));
    const outcome = await waitLoop(rounds.round, {
      backoff: BACKOFF,
      clock,
      deadline: start + 1000,
    });
    expect(outcome).toBe('deadline');
    expect(clock.pauses).toEqual([200, 300, 450, 50]);
    expect(clock.time).toBe(start + 1000);
    expect(rounds.runs()).toBe(5);
  });

  it('with a deadline already passed, runs one round and no pause', async () => {
    const clock = fakeClock();
    const rounds = scripted(['idle']);
    expect(await waitLoop(rounds.round, { backoff: BACKOFF, clock, deadline: clock.time })).toBe(
      'deadline',
    );
    expect(rounds.runs()).toBe(1);
    expect(clock.pauses).toEqual([]);
  });

  it('a round that is done wins over a passed deadline and an aborted signal', async () => {
    const clock = fakeClock();
    const controller = new AbortController();
    controller.abort();
    expect(
      await waitLoop(async () => 'done', {
        backoff: BACKOFF,
        clock,
        deadline: clock.time - 1,
        signal: controller.signal,
      }),
    ).toBe('done');
  });

  it('stops without another round when the signal aborts during a pause', async () => {
    const controller = new AbortController();
    const pauses: number[] = [];
    // A pause that only an abort ends, as a long real one would be.
    const clock: Clock = {
      now: () => 0,
      sleep: (ms, signal) =>
        new Promise((resolve) => {
          pauses.push(ms);
          signal?.addEventListener('abort', () => resolve(), { once: true });
        }),
    };
    let runs = 0;
    const outcome = waitLoop(
      async () => {
        runs += 1;
        // Aborts once the loop is in the pause that follows this round.
        setImmediate(() => controller.abort());
        return 'idle';
      },
      { backoff: BACKOFF, clock, signal: controller.signal },
    );
    expect(await outcome).toBe('aborted');
    expect(runs).toBe(1);
    expect(pauses).toEqual([200]);
  });

  it('stops after the round in progress when the signal aborts during it', async () => {
    const clock = fakeClock();
    const controller = new AbortController();
    let runs = 0;
    const outcome = await waitLoop(
      async () => {
        runs += 1;
        controller.abort();
        return 'progress';
      },
      { backoff: BACKOFF, clock, signal: controller.signal },
    );
    expect(outcome).toBe('aborted');
    expect(runs).toBe(1);
    expect(clock.pauses).toEqual([]);
  });

  it('treats a factor below 1 as 1 and a negative delay as none', async () => {
    const clock = fakeClock();
    await waitLoop(scripted(['idle', 'idle', 'idle']).round, {
      backoff: { initialMs: 300, factor: 0.5, maxMs: 1000 },
      clock,
    });
    expect(clock.pauses).toEqual([300, 300, 300]);
    const other = fakeClock();
    await waitLoop(scripted(['idle', 'idle']).round, {
      backoff: { initialMs: -5, factor: 2, maxMs: 1000 },
      clock: other,
    });
    expect(other.pauses).toEqual([0, 0]);
  });
});

describe('timerSleep', () => {
  it('waits the time given', async () => {
    const started = performance.now();
    await timerSleep(30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
  });

  it('ends a long pause as soon as the signal aborts, without an error', async () => {
    const controller = new AbortController();
    const pause = timerSleep(600_000, controller.signal);
    setImmediate(() => controller.abort());
    await expect(pause).resolves.toBeUndefined();
    const aborted = new AbortController();
    aborted.abort();
    await expect(timerSleep(600_000, aborted.signal)).resolves.toBeUndefined();
  });
});
