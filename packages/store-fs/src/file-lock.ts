import { randomBytes } from 'node:crypto';
import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { getErrorMessage, type ProcessIdentity, YonderError } from '@yonder/core';
import { currentProcessIdentity, isProcessAlive } from '@yonder/core/backend-kit';

interface Holder extends ProcessIdentity {
  nonce: string;
  expiresAt: number;
}

/** A held lock file; `release` removes it only if it is still ours. */
export interface HeldLock {
  release(): void;
}

function readHolder(path: string): Holder | null | 'missing' {
  try {
    const text = readFileSync(path, 'utf8');
    const value = JSON.parse(text) as Holder;
    return typeof value.nonce === 'string' ? value : null;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : null;
  }
}

function isStale(path: string, holder: Holder | null, now: number): boolean {
  if (holder === null) {
    // Unreadable: a writer died between creating and filling it, or is filling it now.
    try {
      return now - statSync(path).mtimeMs > 5_000;
    } catch {
      return true;
    }
  }
  if (now > holder.expiresAt) return true;
  return !isProcessAlive(holder);
}

/**
 * Take a lock file once: created exclusively, holding this process's identity and an expiry.
 * A lock whose holder died (pid + start time + boot id) or overran its expiry is broken.
 * Returns null when a live holder has it.
 */
export function tryLock(path: string, ttlMs: number): HeldLock | null {
  const me: Holder = {
    ...currentProcessIdentity(),
    nonce: randomBytes(8).toString('hex'),
    expiresAt: Date.now() + ttlMs,
  };
  const held: HeldLock = {
    release() {
      const current = readHolder(path);
      if (current !== 'missing' && current !== null && current.nonce === me.nonce) {
        try {
          unlinkSync(path);
        } catch {
          /* already gone */
        }
      }
    },
  };
  for (let attempt = 0; attempt < 3; attempt += 1) {
    if (create(path, me)) return held;
    const holder = readHolder(path);
    if (holder === 'missing') continue;
    if (!isStale(path, holder, Date.now())) return null;
    // Break it: move it aside atomically, then make sure what we moved was the stale one.
    const aside = `${path}.stale-${me.nonce}`;
    try {
      renameSync(path, aside);
    } catch {
      continue;
    }
    const moved = readHolder(aside);
    const movedNonce = moved !== 'missing' && moved !== null ? moved.nonce : null;
    const staleNonce = holder !== null ? holder.nonce : null;
    if (movedNonce !== staleNonce) {
      // We moved a fresh lock taken meanwhile: put it back unless someone else has the path.
      try {
        linkSync(aside, path);
      } catch {
        /* path taken again: that holder wins */
      }
      try {
        unlinkSync(aside);
      } catch {}
      return null;
    }
    try {
      unlinkSync(aside);
    } catch {}
  }
  return null;
}

/**
 * Create the lock file holding `me`: written to a temporary file, then linked into place, so
 * the lock appears whole or not at all (a crash or a full disk never leaves an empty lock).
 * False when the lock exists.
 * @throws YonderError `E_STORE` when it cannot be written.
 */
function create(path: string, me: Holder): boolean {
  const temporary = `${path}.${me.nonce}.tmp`;
  try {
    const fd = openSync(temporary, 'wx', 0o600);
    try {
      writeSync(fd, JSON.stringify(me));
    } finally {
      closeSync(fd);
    }
    linkSync(temporary, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    const full =
      (error as NodeJS.ErrnoException).code === 'ENOSPC'
        ? ' The disk is full; free space and try again.'
        : '';
    throw new YonderError(
      'E_STORE',
      `Cannot create lock ${path}: ${getErrorMessage(error)}.${full}`,
      {
        cause: error,
      },
    );
  } finally {
    try {
      unlinkSync(temporary);
    } catch {}
  }
}

/**
 * Take a lock file, waiting for a live holder for up to `timeoutMs`.
 * @throws YonderError `E_STORE` naming the lock and its holder when the time runs out.
 */
export async function lock(
  path: string,
  options: { ttlMs?: number; timeoutMs?: number } = {},
): Promise<HeldLock> {
  const ttlMs = options.ttlMs ?? 60_000;
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let delay = 2;
  for (;;) {
    const held = tryLock(path, ttlMs);
    if (held) return held;
    if (Date.now() >= deadline) {
      const holder = readHolder(path);
      const who =
        holder !== 'missing' && holder !== null
          ? ` (held by pid ${holder.pid} on ${holder.host})`
          : '';
      throw new YonderError('E_STORE', `Timed out waiting for the lock ${path}${who}.`);
    }
    await sleep(delay + Math.random() * delay);
    delay = Math.min(delay * 2, 50);
  }
}

/** Whether a lock file is held by a live holder now. */
export function isLocked(path: string): boolean {
  const holder = readHolder(path);
  if (holder === 'missing') return false;
  return !isStale(path, holder, Date.now());
}
