import { logBytes } from '@yonder/test-helpers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sliceLog } from '../remote/slice-log.js';
import type { LogChunkV1 } from '../spec/backend/v1/backend-v1.js';
import { pumpLog } from './log-pump.js';

/** A reader of `log` that returns at most `clamp` bytes a read, and counts reads in flight. */
function reader(log: () => Buffer, clamp = Number.POSITIVE_INFINITY) {
  const stats = { reads: 0, inFlight: 0, most: 0 };
  const read = async (offset: number, maxBytes: number): Promise<LogChunkV1> => {
    stats.reads += 1;
    stats.inFlight += 1;
    stats.most = Math.max(stats.most, stats.inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    stats.inFlight -= 1;
    return sliceLog(log(), { offset, maxBytes: Math.min(maxBytes, clamp) });
  };
  return { read, stats };
}

/**
 * A reader that streams, as a transport with `onStdout` does: pieces of at most `piece` bytes
 * through one buffer it fills again once each is written, its chunk returned without data.
 */
function streamer(log: Buffer, piece: number) {
  const stats = { reads: [] as Array<{ offset: number; maxBytes: number }>, inFlight: 0, most: 0 };
  const read = async (
    offset: number,
    maxBytes: number,
    onData: (piece: LogChunkV1) => Promise<void>,
  ): Promise<LogChunkV1> => {
    stats.reads.push({ offset, maxBytes });
    stats.inFlight += 1;
    stats.most = Math.max(stats.most, stats.inFlight);
    const buffer = Buffer.alloc(piece);
    const start = Math.min(offset, log.length);
    const end = Math.min(log.length, start + maxBytes);
    for (let at = start; at < end; at += piece) {
      const length = log.copy(buffer, 0, at, Math.min(end, at + piece));
      await onData({
        exists: true,
        data: buffer.subarray(0, length),
        start: at,
        offset: at + length,
        size: log.length,
      });
      buffer.fill(0x2a); // used again: what was written must have been copied by then
    }
    stats.inFlight -= 1;
    return { exists: true, data: Buffer.alloc(0), start, offset: end, size: log.length };
  };
  return { read, stats };
}

/** Pump `bytes` from `from` with `read`, checking each chunk follows the last and is at most `chunkBytes`; what was handed over, copied. */
async function pumpChecked(
  read: Parameters<typeof pumpLog>[0],
  bytes: Buffer,
  from: number,
  options: { chunkBytes: number; streamBytes?: number },
) {
  const pieces: Buffer[] = [];
  let next = from;
  const result = await pumpLog(
    read,
    async (chunk) => {
      expect(chunk.start).toBe(next);
      expect(chunk.data.length).toBeLessThanOrEqual(options.chunkBytes);
      next = chunk.offset;
      pieces.push(Buffer.from(chunk.data));
      await new Promise((resolve) => setImmediate(resolve));
    },
    { from, to: bytes.length, ...options },
  );
  expect(Buffer.concat(pieces).equals(bytes.subarray(from))).toBe(true);
  expect(result).toMatchObject({ offset: bytes.length, exists: true, shrank: false });
}

describe('pumpLog', () => {
  it('from a backend that streams: every byte in order, in chunks of at most chunkBytes, one read at a time, then reads of streamBytes', async () => {
    await fc.assert(
      fc.asyncProperty(
        logBytes(),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 13 }),
        fc.nat({ max: 20 }),
        async (bytes, chunkBytes, piece, from) => {
          const { read, stats } = streamer(bytes, piece);
          const start = Math.min(from, bytes.length);
          await pumpChecked(read, bytes, start, { chunkBytes, streamBytes: 4 * chunkBytes });
          expect(stats.most).toBeLessThanOrEqual(1);
          // The first read asks for a chunk; once it streamed, each asks for streamBytes.
          for (const [index, asked] of stats.reads.entries())
            expect(asked.maxBytes).toBe(
              Math.min(index === 0 ? chunkBytes : 4 * chunkBytes, bytes.length - asked.offset),
            );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('from a backend that streams: an abort stops the read after the piece in hand', async () => {
    const log = Buffer.from('abcdefghijklmnopqrstuvwxyz');
    const { read } = streamer(log, 2);
    const stop = new AbortController();
    const seen: string[] = [];
    const result = await pumpLog(
      read,
      (chunk) => {
        seen.push(chunk.data.toString());
        if (chunk.offset >= 6) stop.abort();
      },
      { from: 0, to: log.length, chunkBytes: 4, streamBytes: 100, signal: stop.signal },
    );
    expect(seen).toEqual(['ab', 'cd', 'ef']);
    expect(result).toMatchObject({ offset: 6, bytes: 6, exists: true, shrank: false });
  });

  it('hands over every byte of the range in order, in chunks of at most chunkBytes, whatever the reader returns', async () => {
    await fc.assert(
      fc.asyncProperty(
        logBytes(),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 12 }),
        fc.nat({ max: 20 }),
        async (bytes, chunkBytes, clamp, from) => {
          const { read, stats } = reader(() => bytes, clamp);
          await pumpChecked(read, bytes, Math.min(from, bytes.length), { chunkBytes });
          // One chunk written while at most two are read: memory bounded by a few chunks.
          expect(stats.most).toBeLessThanOrEqual(2);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('following: reads on to the size the later reads report, as the log grows', async () => {
    let log = Buffer.from('abcdefgh');
    const { read } = reader(() => log);
    const seen: string[] = [];
    const result = await pumpLog(
      read,
      (chunk) => {
        seen.push(chunk.data.toString());
        if (log.length < 12) log = Buffer.concat([log, Buffer.from('ijkl')]);
      },
      { from: 1, chunkBytes: 4 },
    );
    expect(seen.join('')).toBe('bcdefghijkl');
    expect(result).toMatchObject({ offset: 12, size: 12, bytes: 11 });
    // What is written after the last read is left for the next copy.
    log = Buffer.concat([log, Buffer.from('m')]);
    const next = await pumpLog(read, (chunk) => void seen.push(chunk.data.toString()), {
      from: result.offset,
      chunkBytes: 4,
    });
    expect(next).toMatchObject({ offset: 13, bytes: 1 });
  });

  it('stops when the log shrank or disappeared, and on an abort after the chunk in hand', async () => {
    let log = Buffer.from('0123456789');
    const shrinking = reader(() => log);
    const shrank = await pumpLog(
      shrinking.read,
      () => {
        log = Buffer.from('01');
      },
      { from: 0, to: 10, chunkBytes: 3 },
    );
    expect(shrank).toMatchObject({ shrank: true, offset: 3 });
    const gone = await pumpLog(
      async () => ({ exists: false, data: Buffer.alloc(0), start: 0, offset: 0, size: 0 }),
      () => {},
      { from: 0, chunkBytes: 3 },
    );
    expect(gone.exists).toBe(false);
    const controller = new AbortController();
    const steady = reader(() => Buffer.from('0123456789'));
    const written: string[] = [];
    const aborted = await pumpLog(
      steady.read,
      (chunk) => {
        written.push(chunk.data.toString());
        controller.abort();
      },
      { from: 0, to: 10, chunkBytes: 2, signal: controller.signal },
    );
    expect(written).toEqual(['01']);
    expect(aborted.offset).toBe(2);
    expect(steady.stats.inFlight).toBe(0);
  });

  it('a read that fails fails the copy, after the reads in flight end, with nothing unhandled', async () => {
    let calls = 0;
    const failing = async (offset: number, maxBytes: number): Promise<LogChunkV1> => {
      calls += 1;
      if (calls === 2) throw new Error('lost');
      return sliceLog(Buffer.from('0123456789'), { offset, maxBytes });
    };
    await expect(pumpLog(failing, () => {}, { from: 0, to: 10, chunkBytes: 2 })).rejects.toThrow(
      'lost',
    );
  });
});
