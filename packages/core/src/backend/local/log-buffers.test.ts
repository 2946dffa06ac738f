import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pumpLog } from '../../manager/log-pump.js';
import { recycleLogBuffer, takeLogBuffer } from './log-buffers.js';
import { readLogFile } from './read-log-file.js';

describe('the buffers logs are read into on this machine', () => {
  it('hands a buffer out again only once it is given back, and never one it did not make', () => {
    const first = takeLogBuffer(100_000);
    recycleLogBuffer(first);
    recycleLogBuffer(first.subarray(0, 10));
    const again = takeLogBuffer(100_000);
    expect(again.buffer).toBe(first.buffer);
    // Given back once only, it is handed out once only.
    expect(takeLogBuffer(100_000).buffer).not.toBe(first.buffer);
    const foreign = Buffer.alloc(100_000);
    recycleLogBuffer(foreign);
    expect(takeLogBuffer(100_000).buffer).not.toBe(foreign.buffer);
    // Small ones come from Node's shared pool and are never taken back.
    const small = takeLogBuffer(10);
    recycleLogBuffer(small);
    const next = takeLogBuffer(10);
    expect(next.buffer === small.buffer && next.byteOffset === small.byteOffset).toBe(false);
  });

  it('a chunk stays intact until its write resolves, while later reads reuse the memory', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'yonder-log-buffers-'));
    try {
      const bytes = randomBytes(3 * 1024 * 1024 + 17);
      const path = join(scratch, 'log');
      writeFileSync(path, bytes);
      const seen: Buffer[] = [];
      const memory = new Set<ArrayBufferLike>();
      const result = await pumpLog(
        (offset, maxBytes) => readLogFile(path, { offset, maxBytes }),
        async (chunk) => {
          memory.add(chunk.data.buffer);
          const expected = bytes.subarray(chunk.start, chunk.offset);
          // A slow writer: the reads ahead of it run meanwhile.
          await new Promise((resolve) => setTimeout(resolve, 2));
          expect(chunk.data.equals(expected)).toBe(true);
          seen.push(Buffer.from(chunk.data));
        },
        { from: 0, to: bytes.length, chunkBytes: 256 * 1024 },
      );
      expect(result.offset).toBe(bytes.length);
      expect(Buffer.concat(seen).equals(bytes)).toBe(true);
      // 13 chunks went through a handful of buffers.
      expect(memory.size).toBeLessThanOrEqual(5);
    } finally {
      rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    }
  });
});
