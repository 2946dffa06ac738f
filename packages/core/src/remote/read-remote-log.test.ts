import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logBytes as arbitraryLog, referenceTail } from '@yonder/test-helpers';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLogFile } from '../backend/local/read-log-file.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { readLogByScript, readRemoteLog } from './read-remote-log.js';
import { sliceLog, tailLinesStart } from './slice-log.js';

let scratch: string;
const local = createLocalTransport();
/** This machine, under another id: the script runs, as it does on every other transport. */
const scripted: TransportV1 = { ...local, id: 'scripted' };

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-remote-log-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let files = 0;
function logFile(bytes: Uint8Array): string {
  files += 1;
  const path = join(scratch, `log-${files}`);
  writeFileSync(path, bytes);
  return path;
}

const logBytes = arbitraryLog();

describe('the reference tail', () => {
  it('is what `tail -n` prints, with and without a final newline', () => {
    fc.assert(
      fc.property(logBytes, fc.integer({ min: 0, max: 12 }), (bytes, count) => {
        const tail = spawnSync('tail', ['-n', String(count), logFile(bytes)]);
        expect(tail.stdout.equals(referenceTail(bytes, count))).toBe(true);
      }),
      { numRuns: 60 },
    );
    expect(referenceTail(Buffer.from('a\nb'), 1).toString()).toBe('b');
    expect(referenceTail(Buffer.from('a\nb\n'), 1).toString()).toBe('b\n');
  });
});

describe('READ_LOG_SCRIPT (readLogByScript)', () => {
  it('tailLines is exactly `tail -n`, read backwards in chunks of any size', async () => {
    await fc.assert(
      fc.asyncProperty(
        logBytes,
        fc.integer({ min: 0, max: 14 }),
        fc.integer({ min: 1, max: 9 }),
        async (bytes, count, scan) => {
          const chunk = await readLogByScript(
            scripted,
            logFile(bytes),
            { tailLines: count, maxBytes: 1 << 20 },
            scan,
          );
          const expected = referenceTail(bytes, count);
          expect(chunk.data.equals(expected)).toBe(true);
          expect(chunk).toMatchObject({
            exists: true,
            start: bytes.length - expected.length,
            offset: bytes.length,
            size: bytes.length,
          });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('reads by offset, cutting characters anywhere, and loses no byte', async () => {
    await fc.assert(
      fc.asyncProperty(logBytes, fc.integer({ min: 1, max: 11 }), async (bytes, maxBytes) => {
        const log = logFile(bytes);
        const pieces: Buffer[] = [];
        let offset = 0;
        do {
          const chunk = await readLogByScript(scripted, log, { offset, maxBytes });
          expect(chunk.start).toBe(offset);
          expect(chunk.data.length).toBe(Math.min(maxBytes, bytes.length - offset));
          expect(chunk.size).toBe(bytes.length);
          pieces.push(chunk.data);
          offset = chunk.offset;
        } while (offset < bytes.length);
        expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
      }),
      { numRuns: 25 },
    );
  });

  it('tailBytes and maxBytes: the last N bytes, at most maxBytes of them from where they start', async () => {
    const bytes = Buffer.from('ab☃cd🎉\n\xff', 'latin1');
    const log = logFile(bytes);
    for (const count of [0, 1, 4, bytes.length, bytes.length + 5]) {
      const chunk = await readLogByScript(scripted, log, { tailBytes: count });
      expect(chunk.data.equals(bytes.subarray(Math.max(0, bytes.length - count)))).toBe(true);
    }
    const cut = await readLogByScript(scripted, log, { tailLines: 5, maxBytes: 3 });
    expect(cut).toMatchObject({ start: 0, offset: 3, size: bytes.length });
    expect(await readLogByScript(scripted, log, { offset: 100 })).toMatchObject({
      start: bytes.length,
      offset: bytes.length,
      data: Buffer.alloc(0),
    });
  });

  it('reads a 20 MB log backwards in a few growing chunks', async () => {
    const line = Buffer.from(`${'☃'.repeat(30)}\n`);
    const bytes = Buffer.concat([
      Buffer.alloc(20_000_000, 0x61),
      Buffer.from('\n'),
      Buffer.concat(Array(1000).fill(line)),
    ]);
    const log = logFile(bytes);
    const chunk = await readLogByScript(scripted, log, { tailLines: 1001, maxBytes: 200_000 });
    expect(chunk.start).toBe(0);
    const last = await readLogByScript(scripted, log, { tailLines: 1000, maxBytes: 200_000 });
    expect(last.start).toBe(20_000_001);
    expect(last.data.equals(bytes.subarray(20_000_001))).toBe(true);
  });

  it('leaves what the job appends after the size it read for the next read', async () => {
    const log = logFile(Buffer.from('one\ntwo\n'));
    const first = await readLogByScript(scripted, log, { tailLines: 10 });
    expect(first.data.toString()).toBe('one\ntwo\n');
    appendFileSync(log, 'three\n');
    const next = await readLogByScript(scripted, log, { offset: first.offset });
    expect(next).toMatchObject({ start: 8, offset: 14, size: 14 });
    expect(next.data.toString()).toBe('three\n');
  });

  it('a missing log is not an error; a transport that gives no bytes is', async () => {
    const missing = await readLogByScript(scripted, join(scratch, 'none'), { tailLines: 1 });
    expect(missing).toMatchObject({ exists: false, offset: 0, size: 0 });
    expect(missing.message).toBe(`${join(scratch, 'none')} does not exist`);
    const textOnly: TransportV1 = {
      ...scripted,
      id: 'text-only',
      runScript: async (script, args, options) => {
        const { stdoutBytes: _bytes, ...rest } = await local.runScript(script, args, options);
        return { ...rest, stdout: 'LOG 1 0 1\na' };
      },
    };
    await expect(readLogByScript(textOnly, logFile(Buffer.from('a')), {})).rejects.toMatchObject({
      code: 'E_LOG_UNAVAILABLE',
      message: expect.stringContaining("must honour RunOptionsV1.encoding 'buffer'"),
    });
    await expect(readRemoteLog(scripted, '', {})).rejects.toMatchObject({
      code: 'E_LOG_UNAVAILABLE',
    });
  });
});

describe('readRemoteLog on this machine', () => {
  it('reads from an offset straight from the file, the same bytes as the script', async () => {
    await fc.assert(
      fc.asyncProperty(
        logBytes,
        fc.nat({ max: 60 }),
        fc.integer({ min: 1, max: 20 }),
        async (bytes, offset, maxBytes) => {
          const log = logFile(bytes);
          const direct = await readRemoteLog(local, log, { offset, maxBytes });
          expect(direct).toEqual(await readLogByScript(scripted, log, { offset, maxBytes }));
          expect(direct).toEqual(await readLogFile(log, { offset, maxBytes }));
        },
      ),
      { numRuns: 25 },
    );
    expect(await readLogFile(join(scratch, 'none'), { offset: 0 })).toMatchObject({
      exists: false,
    });
  });

  it('both refuse a log in a directory that is not private, a link, or a directory', async () => {
    const open = mkdtempSync(join(tmpdir(), 'yonder-remote-log-open-'));
    try {
      chmodSync(open, 0o755);
      const shared = join(open, 'job.log');
      writeFileSync(shared, 'theirs\n');
      const link = join(scratch, 'link.log');
      symlinkSync(shared, link);
      const directory = join(scratch, 'a-directory');
      mkdirSync(directory);
      for (const [path, why] of [
        [shared, 'is not a private job directory of yours'],
        [link, 'it is not a regular file'],
        [directory, 'it is not a regular file'],
      ] as const) {
        for (const read of [
          () => readLogFile(path, { offset: 0 }),
          () => readLogByScript(scripted, path, { offset: 0 }),
        ]) {
          await expect(read()).rejects.toMatchObject({
            code: 'E_LOG_UNAVAILABLE',
            message: expect.stringContaining(why),
          });
        }
      }
    } finally {
      rmSync(open, { recursive: true, force: true });
    }
  });
});

describe('sliceLog and tailLinesStart (a log held in memory)', () => {
  it('give the same bytes as the script and the reference', () => {
    fc.assert(
      fc.property(
        logBytes,
        fc.integer({ min: 0, max: 14 }),
        fc.integer({ min: 0, max: 50 }),
        (bytes, count, tailBytes) => {
          const expected = referenceTail(bytes, count);
          expect(bytes.subarray(tailLinesStart(bytes, count).start).equals(expected)).toBe(true);
          expect(sliceLog(bytes, { tailLines: count }).data.equals(expected)).toBe(true);
          const last = sliceLog(bytes, { tailBytes });
          expect(last.data.equals(bytes.subarray(Math.max(0, bytes.length - tailBytes)))).toBe(
            true,
          );
          expect(last.offset).toBe(bytes.length);
        },
      ),
      { numRuns: 300 },
    );
    expect(sliceLog(Buffer.from('abcdef'), { offset: 2, maxBytes: 3 })).toMatchObject({
      start: 2,
      offset: 5,
      size: 6,
    });
    expect(tailLinesStart(Buffer.from('\n'), 5)).toEqual({ start: 0, found: 1 });
    expect(tailLinesStart(Buffer.from('a\nb\n'), 5)).toEqual({ start: 0, found: 2 });
  });
});

describe('a streamed read cut short (its time limit, a dropped connection)', () => {
  it('waits for the piece being written, takes nothing after, and goes on from the last byte written', async () => {
    const piece = 1024 * 1024;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: string[] = [];
    // A transport that hands over one full piece, gives up on the command while that piece is
    // still being written, and then (as a pipe drained after the kill does) hands over more.
    const cut: TransportV1 = {
      ...local,
      id: 'cut',
      streamsStdout: true,
      runScript: async (_script, _args, options) => {
        const sink = options?.onStdout as (chunk: Buffer) => Promise<void> | undefined;
        void sink(
          Buffer.concat([
            Buffer.from(`LOG ${3 * piece} 0 ${3 * piece}\n`),
            Buffer.alloc(piece, 0x61),
          ]),
        );
        setImmediate(() => void sink(Buffer.alloc(piece, 0x62)));
        throw Object.assign(new Error('Command timed out after 600s on cut.'), {
          code: 'E_TIMEOUT',
        });
      },
    };
    const reading = readLogByScript(cut, '/log', {
      offset: 0,
      onData: async (chunk) => {
        await gate;
        // Still the bytes handed over: the buffer was not given to anything else meanwhile.
        seen.push(`${chunk.start}:${chunk.data.length}:${[...new Set(chunk.data)].join(',')}`);
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    const result = await reading;
    expect(seen).toEqual([`0:${piece}:97`]);
    expect(result).toMatchObject({ exists: true, start: 0, offset: piece });
  });
});
