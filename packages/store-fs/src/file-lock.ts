/**
 * Locks shared by yonder processes (see lock-entry.ts for how one sits on disk), also across hosts on a shared `$HOME` and across PID
 * namespaces: each records its holder (host, boot id, PID namespace, pid and start time) and a
 * lease the holder renews while it works. Only a dead holder on this very machine, or a lease
 * seen unrenewed for its whole length, is broken; time is measured on the monotonic clock.
 */
import { randomBytes } from 'node:crypto';
import { readlinkSync, renameSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { YonderError } from '@yonder/core';
import {
  currentProcessIdentity,
  isProcessAlive,
  type ProcessIdentity,
  readBootId,
} from '@yonder/core/backend-kit';
import {
  LOCK_BYTES,
  placeEntry,
  readEntry,
  removeEntry,
  rewriteEntry,
  takeOffEntry,
} from './lock-entry.js';

export {
  LOCK_BYTES,
  removeEntry as removeLock,
  reserveEntry as reserveLock,
} from './lock-entry.js';

/** How long a lock file that cannot be read must stay unchanged before it is broken. */
const UNREADABLE_GRACE_MS = 5_000;
/**
 * How far another host's clock may be off ours. A holder's own expiry (by its clock) is
 * believed only this much past it; before that, only a lease seen unrenewed breaks it.
 */
export const MAX_CLOCK_SKEW_MS = 15 * 60_000;

interface Holder extends ProcessIdentity {
  /** `readlink /proc/self/ns/pid` of the holder: a pid means something only in its namespace. */
  pidNamespace?: string;
  nonce: string;
  /** How long the lease lasts unrenewed. */
  ttlMs: number;
  /** The holder's clock at which the lease ends unless renewed. */
  expiresAt: number;
  renewals: number;
}

/** What is at a lock path now: its holder (null if unreadable) and its exact text. */
interface Seen {
  holder: Holder | null;
  text: string;
}

/** A held lock file; `release` removes it only if it is still ours. */
export interface HeldLock {
  /** Give the lock up; with a spare, its room is set aside again unless `keepSpare` is false. */
  release(options?: { keepSpare?: boolean }): void;
}

export interface LockOptions {
  /** The lease: how long the lock lasts without renewal (renewed every third of it). */
  ttlMs?: number;
  /** How long to wait for a live holder. */
  timeoutMs?: number;
  /** A spare lock (see `reserveLock`) to take the lock with when the disk is full. */
  spare?: string;
}

let namespace: string | undefined;

/** This process's PID namespace, `unknown` where /proc does not say. */
export function pidNamespace(): string {
  if (namespace === undefined) {
    try {
      namespace = readlinkSync('/proc/self/ns/pid');
    } catch {
      namespace = 'unknown';
    }
  }
  return namespace;
}

function encode(holder: Holder): string {
  const text = JSON.stringify(holder);
  if (Buffer.byteLength(text) > LOCK_BYTES)
    throw new YonderError('E_STORE', `A lock holder does not fit in ${LOCK_BYTES} bytes: ${text}`);
  return text.padEnd(LOCK_BYTES, ' ');
}

function decode(text: string): Holder | null {
  try {
    const value = JSON.parse(text) as Partial<Holder>;
    if (
      typeof value !== 'object' ||
      value === null ||
      typeof value.nonce !== 'string' ||
      typeof value.pid !== 'number' ||
      typeof value.host !== 'string' ||
      typeof value.bootId !== 'string'
    )
      return null;
    return {
      ...(value as Holder),
      ttlMs: typeof value.ttlMs === 'number' && value.ttlMs > 0 ? value.ttlMs : 60_000,
      expiresAt: typeof value.expiresAt === 'number' ? value.expiresAt : 0,
      startTime: String(value.startTime ?? '0'),
    };
  } catch {
    return null;
  }
}

function look(path: string): Seen | 'missing' {
  const text = readEntry(path);
  if (text === 'missing') return 'missing';
  return { holder: decode(text), text };
}

/** Whether the holder is a process of this machine, this boot and this PID namespace. */
function isLocal(holder: Holder): boolean {
  if (holder.host !== hostname() || holder.bootId !== readBootId()) return false;
  // A lock from before namespaces were recorded was taken on this machine if host and boot match.
  return holder.pidNamespace === undefined || holder.pidNamespace === pidNamespace();
}

/**
 * What one caller has watched of lock files: a lease is over when its text (renewals change
 * it) has stayed the same for its whole length on this process's monotonic clock, however
 * the wall clocks of this host and the holder's stand, and whatever the file's mtime says.
 */
export class LockWatcher {
  private readonly seen = new Map<string, { text: string; since: number }>();
  /** When the watching began: what is seen first has been there at least since then. */
  private readonly started = performance.now();

  /** Record what is at `path` now; true when it has not changed for `lengthMs`. */
  unchangedFor(path: string, text: string, lengthMs: number): boolean {
    const now = performance.now();
    const last = this.seen.get(path);
    if (!last || last.text !== text) {
      this.seen.set(path, { text, since: last ? now : this.started });
      return !last && now - this.started >= lengthMs;
    }
    return now - last.since >= lengthMs;
  }
}

/** Whether the lock as seen may be broken now. */
function isStale(path: string, seen: Seen, watcher: LockWatcher | undefined): boolean {
  const { holder, text } = seen;
  if (holder === null) return watcher?.unchangedFor(path, text, UNREADABLE_GRACE_MS) ?? false;
  if (isLocal(holder) && !isProcessAlive(holder)) return true;
  if (Date.now() > holder.expiresAt + MAX_CLOCK_SKEW_MS) return true;
  return watcher?.unchangedFor(path, text, holder.ttlMs) ?? false;
}

/**
 * Break the lock seen at `path`: move it aside atomically, then make sure what was moved is
 * what was judged stale (a fresh lock taken meanwhile is put back). True when it was broken.
 */
function breakLock(path: string, seen: Seen, nonce: string): boolean {
  const aside = `${path}.stale-${nonce}`;
  try {
    renameSync(path, aside);
  } catch {
    return false;
  }
  let moved: Seen | 'missing';
  try {
    moved = look(aside);
  } catch {
    moved = 'missing';
  }
  if (moved === 'missing' || moved.text !== seen.text) {
    try {
      renameSync(aside, path);
      return false;
    } catch {
      /* path taken again: that holder wins */
    }
    removeEntry(aside);
    return false;
  }
  removeEntry(aside);
  return true;
}

/** Rewrite our own lock in place with one more renewal; false when it is no longer ours. */
function renew(path: string, me: Holder): boolean {
  let seen: Seen | 'missing';
  try {
    seen = look(path);
  } catch {
    return false;
  }
  if (seen === 'missing' || seen.holder?.nonce !== me.nonce) return false;
  me.renewals += 1;
  me.expiresAt = Date.now() + me.ttlMs;
  try {
    rewriteEntry(path, encode(me));
  } catch {
    /* renewal is best effort: the next one may succeed */
  }
  return true;
}

/**
 * Put the lock holding `me` in place: whole or not at all (a crash or a full disk never leaves
 * an empty lock), from the spare when there is one. False when the lock is taken.
 * @throws YonderError `E_STORE` when it cannot be made.
 */
function create(path: string, me: Holder, spare: string | undefined): boolean {
  try {
    return placeEntry(path, encode(me), spare);
  } catch (error) {
    if (YonderError.isInstance(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    const full =
      code === 'ENOSPC' || code === 'EDQUOT' ? ' The disk is full; free space and try again.' : '';
    throw new YonderError(
      'E_STORE',
      `Cannot create lock ${path}: ${(error as Error).message}.${full}`,
      { cause: error },
    );
  }
}

/**
 * Take a lock file once. A lock whose holder is dead on this machine, or whose lease ran out,
 * is broken (with `watcher`, also one seen unrenewed for its length). While held, the lock is
 * renewed every third of `ttlMs`. Returns null when a live holder has it.
 */
export function tryLock(
  path: string,
  ttlMs: number,
  options: { watcher?: LockWatcher; spare?: string } = {},
): HeldLock | null {
  const me: Holder = {
    ...currentProcessIdentity(),
    pidNamespace: pidNamespace(),
    nonce: randomBytes(8).toString('hex'),
    ttlMs,
    expiresAt: Date.now() + ttlMs,
    renewals: 0,
  };
  for (let attempt = 0; attempt < 3; attempt += 1) {
    if (create(path, me, options.spare)) return hold(path, me, options.spare);
    const seen = look(path);
    if (seen === 'missing') continue;
    if (!isStale(path, seen, options.watcher)) return null;
    breakLock(path, seen, me.nonce);
  }
  return null;
}

function hold(path: string, me: Holder, spare: string | undefined): HeldLock {
  const timer = setInterval(
    () => {
      if (!renew(path, me)) clearInterval(timer);
    },
    Math.max(10, Math.floor(me.ttlMs / 3)),
  );
  timer.unref();
  return {
    release(options = {}) {
      clearInterval(timer);
      let seen: Seen | 'missing';
      try {
        seen = look(path);
      } catch {
        return;
      }
      if (seen === 'missing' || seen.holder?.nonce !== me.nonce) return;
      // With a spare, the lock itself becomes the spare: its room waits for the next lock.
      takeOffEntry(path, options.keepSpare === false ? undefined : spare);
    },
  };
}

function describeHolder(path: string): string {
  try {
    const seen = look(path);
    if (seen === 'missing' || seen.holder === null) return '';
    return ` (held by pid ${seen.holder.pid} on ${seen.holder.host})`;
  } catch {
    return '';
  }
}

/**
 * Take a lock file, waiting for a live holder for up to `timeoutMs` (monotonic time).
 * @throws YonderError `E_STORE` naming the lock and its holder when the time runs out.
 */
export async function lock(path: string, options: LockOptions = {}): Promise<HeldLock> {
  const ttlMs = options.ttlMs ?? 60_000;
  const deadline = performance.now() + (options.timeoutMs ?? 30_000);
  const watcher = new LockWatcher();
  const spare = options.spare === undefined ? {} : { spare: options.spare };
  let delay = 2;
  for (;;) {
    const held = tryLock(path, ttlMs, { watcher, ...spare });
    if (held) return held;
    if (performance.now() >= deadline) {
      throw new YonderError(
        'E_STORE',
        `Timed out waiting for the lock ${path}${describeHolder(path)}.`,
      );
    }
    await sleep(delay + Math.random() * delay);
    delay = Math.min(delay * 2, 50);
  }
}

/**
 * Wait while a live holder has the lock, for up to `timeoutMs` (monotonic time). A holder
 * found dead, or seen unrenewed for its lease, loses the lock here. True when it is free.
 */
export async function waitForUnlock(path: string, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  const watcher = new LockWatcher();
  const nonce = randomBytes(8).toString('hex');
  let delay = 5;
  for (;;) {
    const seen = look(path);
    if (seen === 'missing') return true;
    if (isStale(path, seen, watcher)) {
      breakLock(path, seen, nonce);
      continue;
    }
    const left = deadline - performance.now();
    if (left <= 0) return false;
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, 100);
  }
}
