/** The refresh cycle's wait for the wall clock to pass a mark, when the wall clock steps back. */
import { describe, expect, it } from 'vitest';
import { pastMillisecond } from './refresh-jobs.js';

describe('pastMillisecond', () => {
  it('returns once the wall clock reads past the mark', async () => {
    let wall = 1_000;
    const monotonic = () => 0;
    const done = pastMillisecond(1_000, {
      wall: () => {
        wall += 1;
        return wall;
      },
      monotonic,
    });
    await expect(done).resolves.toBeUndefined();
  });

  it('does not wait for a wall clock stepped back: two monotonic milliseconds at most', async () => {
    // The wall clock reads an hour before the mark and never catches up; the monotonic clock
    // goes on. Before the fix this waited for the wall clock, for an hour.
    let monotonic = 0;
    let wallReads = 0;
    await pastMillisecond(1_700_000_000_000, {
      wall: () => {
        wallReads += 1;
        return 1_700_000_000_000 - 3_600_000;
      },
      monotonic: () => {
        monotonic += 0.5;
        return monotonic;
      },
    });
    expect(wallReads).toBeLessThanOrEqual(5);
  });
});
