import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { COLLECT_EVERY_BYTES, passedThrough } from './young-garbage.js';

const arrayBuffers = (): number => process.memoryUsage().arrayBuffers;

describe('passedThrough', () => {
  it('frees the dead buffers of the bytes that passed, once COLLECT_EVERY_BYTES have', async () => {
    const before = arrayBuffers();
    // What ssh2 does per packet: a new buffer, handed on and dropped.
    let passed = 0;
    while (passed < COLLECT_EVERY_BYTES - 64 * 1024) {
      Buffer.allocUnsafe(32 * 1024).fill(1);
      passedThrough(32 * 1024);
      passed += 32 * 1024;
    }
    for (let i = 0; i < 256; i += 1) Buffer.allocUnsafe(32 * 1024).fill(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 8 MiB of dead buffers, and nothing collected yet: the count is short of the threshold.
    expect(arrayBuffers() - before).toBeGreaterThanOrEqual(8 * 1024 * 1024);
    passedThrough(64 * 1024);
    // Freed by the scavenge (the sweeper finishes in the background).
    await expect
      .poll(() => arrayBuffers() - before, { timeout: 2_000, interval: 20 })
      .toBeLessThan(1024 * 1024);
  });

  it('leaves no `gc` to this context or to contexts made after it', () => {
    passedThrough(COLLECT_EVERY_BYTES);
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });

  it('leaves a flag the host process set on', async () => {
    vi.resetModules();
    const fresh = await import('./young-garbage.js');
    setFlagsFromString('--expose-gc');
    try {
      fresh.passedThrough(fresh.COLLECT_EVERY_BYTES);
      expect(runInNewContext('typeof gc')).toBe('function');
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  });

  it('never throws what a host’s own collector throws', async () => {
    vi.resetModules();
    const fresh = await import('./young-garbage.js');
    const host = globalThis as { gc?: () => void };
    let calls = 0;
    host.gc = () => {
      calls += 1;
      throw new Error('the host’s gc failed');
    };
    try {
      expect(() => fresh.passedThrough(fresh.COLLECT_EVERY_BYTES)).not.toThrow();
      expect(() => fresh.passedThrough(fresh.COLLECT_EVERY_BYTES)).not.toThrow();
      // Tried once, then given up on.
      expect(calls).toBe(1);
    } finally {
      delete host.gc;
    }
  });
});
