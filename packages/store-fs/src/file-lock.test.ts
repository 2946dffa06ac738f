/** The lock rules: who may break a lock, and when, whatever the clocks and mtimes say. */
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LOCK_BYTES, lock, MAX_CLOCK_SKEW_MS, tryLock, waitForUnlock } from './file-lock.js';
import { readEntry, removeEntry } from './lock-entry.js';

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'yonder-lock-'));
  path = join(dir, 'x.lock');
});
afterEach(() => {
  vi.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

/** A holder on another host (so its pid means nothing here), its lease `ttlMs` long. */
function foreign(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    pid: 1,
    startTime: '1',
    bootId: 'another-boot',
    host: 'another-host',
    pidNamespace: 'pid:[1]',
    nonce: 'theirs',
    ttlMs: 400,
    expiresAt: Date.now() + 400,
    renewals: 0,
    ...overrides,
  };
}

function plant(holder: Record<string, unknown>): void {
  writeFileSync(path, JSON.stringify(holder).padEnd(LOCK_BYTES, ' '), { mode: 0o600 });
}

/** Renew a planted holder as a live one on another host would, until stopped. */
function keepRenewing(holder: Record<string, unknown>, everyMs: number): () => void {
  let renewals = 0;
  const timer = setInterval(() => {
    renewals += 1;
    plant({ ...holder, renewals });
  }, everyMs);
  return () => clearInterval(timer);
}

describe('file locks', () => {
  it('a holder on another host is not broken while its lease runs, however our clock stands', async () => {
    // Its expiry by its own clock is 5 minutes behind ours (a clock skew), and it renews.
    const holder = foreign({ expiresAt: Date.now() - 5 * 60_000 });
    plant(holder);
    const stop = keepRenewing(holder, 100);
    try {
      await expect(lock(path, { ttlMs: 1000, timeoutMs: 1500 })).rejects.toMatchObject({
        code: 'E_STORE',
        message: expect.stringContaining('held by pid 1 on another-host'),
      });
      expect(JSON.parse(readEntry(path) as string).nonce).toBe('theirs');
    } finally {
      stop();
    }
  });

  it('a holder on another host that stops renewing loses the lock once its lease has run out', async () => {
    plant(foreign({ ttlMs: 400 }));
    const started = performance.now();
    const held = await lock(path, { ttlMs: 1000, timeoutMs: 10_000 });
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(400);
    expect(waited).toBeLessThan(5_000);
    expect(JSON.parse(readEntry(path) as string).nonce).not.toBe('theirs');
    held.release();
  });

  it('a lock file with an mtime in the future is not fresh forever', async () => {
    writeFileSync(path, 'torn', { mode: 0o600 });
    const future = new Date(Date.now() + 3600_000);
    utimesSync(path, future, future);
    const started = performance.now();
    const held = await lock(path, { ttlMs: 1000, timeoutMs: 20_000 });
    expect(performance.now() - started).toBeLessThan(10_000);
    held.release();
  });

  it('an expiry older than any clock skew breaks a lock at once, without watching it', () => {
    plant(foreign({ expiresAt: Date.now() - MAX_CLOCK_SKEW_MS - 60_000 }));
    const held = tryLock(path, 1000);
    expect(held).not.toBeNull();
    held?.release();
  });

  it('waits on the monotonic clock: a wall clock stepped back an hour does not stretch a timeout', async () => {
    plant(foreign({ ttlMs: 60_000 }));
    const stop = keepRenewing(foreign({ ttlMs: 60_000 }), 50);
    const real = Date.now.bind(Date);
    let offset = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => real() - offset);
    try {
      const started = performance.now();
      const waiting = lock(path, { ttlMs: 1000, timeoutMs: 500 });
      offset = 3600_000;
      await expect(waiting).rejects.toMatchObject({ code: 'E_STORE' });
      expect(performance.now() - started).toBeLessThan(3_000);
      const free = await waitForUnlock(path, 300);
      expect(free).toBe(false);
      expect(performance.now() - started).toBeLessThan(4_000);
    } finally {
      stop();
    }
  });

  it('renews a held lock while it is held, and removes only its own on release', async () => {
    const held = tryLock(path, 90);
    expect(held).not.toBeNull();
    const first = readEntry(path) as string;
    expect(Buffer.byteLength(first)).toBe(LOCK_BYTES);
    await sleep(200);
    const later = JSON.parse(readEntry(path) as string);
    expect(later.renewals).toBeGreaterThan(0);
    // Someone else's lock now at the path (ours was broken meanwhile) is left alone.
    removeEntry(path);
    plant(foreign());
    held?.release();
    expect(JSON.parse(readEntry(path) as string).nonce).toBe('theirs');
  });
});
