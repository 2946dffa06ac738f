import { logBytes, referenceTail } from '@yonder/test-helpers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LogTail } from '../spec/job.js';
import { LOG_TAIL_BYTES, mergeLogTail, readLogTail, TailKeeper } from './log-tail.js';

const tail = (start: number, data: Buffer, at = 'then'): LogTail => ({
  at,
  start,
  end: start + data.length,
  data: data.toString('base64'),
});

describe('TailKeeper', () => {
  it('keeps the last 64 KiB of consecutive chunks, whatever their sizes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 40_000 }), { minLength: 1, maxLength: 12 }),
        fc.nat({ max: 1000 }),
        (sizes, first) => {
          const keeper = new TailKeeper();
          const all: Buffer[] = [];
          let at = first;
          for (const [index, size] of sizes.entries()) {
            const data = Buffer.alloc(size, index % 256);
            keeper.add({ start: at, data });
            all.push(data);
            at += size;
          }
          const whole = Buffer.concat(all);
          const kept = keeper.piece();
          expect(
            kept?.data.equals(whole.subarray(Math.max(0, whole.length - LOG_TAIL_BYTES))),
          ).toBe(true);
          expect((kept?.start ?? 0) + (kept?.data.length ?? 0)).toBe(at);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('starts again at a chunk that does not follow; has nothing before the first', () => {
    const keeper = new TailKeeper();
    expect(keeper.piece()).toBeUndefined();
    keeper.add({ start: 0, data: Buffer.from('abc') });
    keeper.add({ start: 10, data: Buffer.from('xyz') });
    expect(keeper.piece()).toEqual({ start: 10, data: Buffer.from('xyz') });
  });
});

describe('the kept tail in the ledger', () => {
  it('joins a new read to what was kept when they meet, else keeps the new read alone', () => {
    const log = Buffer.from('0123456789');
    const previous = tail(0, log.subarray(0, 8));
    expect(mergeLogTail(previous, { start: 6, data: log.subarray(6) }, 'now')).toEqual(
      tail(0, log, 'now'),
    );
    expect(mergeLogTail(previous, { start: 9, data: log.subarray(9) }, 'now')).toEqual(
      tail(9, log.subarray(9), 'now'),
    );
    expect(mergeLogTail(null, { start: 3, data: log.subarray(3) }, 'now')).toEqual(
      tail(3, log.subarray(3), 'now'),
    );
    const big = Buffer.alloc(LOG_TAIL_BYTES + 10, 7);
    expect(mergeLogTail(previous, { start: 8, data: big }, 'now')).toEqual(
      tail(18, big.subarray(10), 'now'),
    );
  });

  it('gives the lines or bytes asked for, and says when it holds fewer than asked', () => {
    fc.assert(
      fc.property(logBytes(), fc.nat({ max: 20 }), fc.nat({ max: 12 }), (bytes, cut, count) => {
        const start = Math.min(cut, bytes.length);
        const kept = tail(start, bytes.subarray(start));
        const lines = readLogTail(kept, { kind: 'lines', count });
        if (lines.complete) expect(lines.chunk.data.equals(referenceTail(bytes, count))).toBe(true);
        if (start === 0) expect(lines.complete).toBe(true);
        const last = readLogTail(kept, { kind: 'bytes', count });
        expect(last.complete).toBe(count <= bytes.length - start || start === 0);
        expect(last.chunk.data.equals(bytes.subarray(Math.max(start, bytes.length - count)))).toBe(
          true,
        );
        expect(readLogTail(kept, { kind: 'all' })).toMatchObject({ complete: start === 0 });
      }),
      { numRuns: 300 },
    );
  });
});
