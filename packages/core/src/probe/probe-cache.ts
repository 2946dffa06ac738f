/** A backend's probe report, cached in memory and in the state directory's private cache/. */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { UntrustedPathError } from '../errors/untrusted-path-error.js';
import type { ProbeReportV1 } from '../spec/backend/v1/backend-v1.js';
import { checkTrustedPath, ensureTrustedDirectory } from '../trust/check-trusted-path.js';
import { writePrivateFileAtomic } from '../trust/private-files.js';
import { readCacheEntry } from './read-cache-entry.js';

const memory = new Map<string, { at: number; report: ProbeReportV1 }>();
/** A probe report is a few facts; anything larger is not one of ours. */
const MAX_CACHE_BYTES = 256 * 1024;
const TRUST = { role: 'the probe cache', type: 'directory' } as const;
/** How long a failed probe is remembered (in memory only): a target that comes back is seen soon. */
export const FAILED_PROBE_TTL_MS = 5_000;

function readCached(file: string): { at: number; report: ProbeReportV1 } | null {
  const value = readCacheEntry(file, MAX_CACHE_BYTES) as {
    at?: unknown;
    report?: { ok?: unknown };
  } | null;
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof value.at !== 'number' ||
    typeof value.report !== 'object' ||
    value.report === null ||
    value.report.ok !== true
  )
    return null;
  return value as { at: number; report: ProbeReportV1 };
}

/**
 * A backend's probe (what the target is: versions, home directory…), cached in memory and
 * under `<state>/cache/` for `ttlMs`, so that each short-lived `yonder` process does not
 * ask again. Only successful probes are written to disk; a failed one is remembered in this
 * process for at most `FAILED_PROBE_TTL_MS`, so a long-lived process (a GUI, `watch`) sees a
 * target that comes back. The cache directory is checked as
 * the state directory is (the user's, 0700); entries are read without following links and
 * replaced through a temporary file, so a link planted there is never written through.
 * An entry from the future (a clock stepped back) is not fresh.
 * @throws UntrustedPathError when the cache directory is not the user's own.
 */
export async function cachedProbe(
  stateDirectory: string,
  key: string,
  ttlMs: number,
  fresh: boolean,
  probe: () => Promise<ProbeReportV1>,
): Promise<ProbeReportV1> {
  const directory = join(stateDirectory, 'cache');
  const file = join(
    directory,
    `probe-${createHash('sha256').update(key).digest('hex').slice(0, 20)}.json`,
  );
  const isFresh = (at: number, ok: boolean): boolean => {
    const age = Date.now() - at;
    return age >= 0 && age < (ok ? ttlMs : Math.min(ttlMs, FAILED_PROBE_TTL_MS));
  };
  if (!fresh) {
    const cached = memory.get(file);
    if (cached && isFresh(cached.at, cached.report.ok)) return cached.report;
    const stored = checkTrustedPath(directory, TRUST) ? readCached(file) : null;
    if (stored && isFresh(stored.at, true)) {
      memory.set(file, stored);
      return stored.report;
    }
  }
  const report = await probe();
  const entry = { at: Date.now(), report };
  memory.set(file, entry);
  if (report.ok) {
    try {
      ensureTrustedDirectory(directory, TRUST);
      writePrivateFileAtomic(file, JSON.stringify(entry));
    } catch (error) {
      // The cache only saves time: a full or read-only disk is no reason to fail. A cache
      // directory someone else controls is, and says so.
      if (UntrustedPathError.isInstance(error)) throw error;
    }
  }
  return report;
}
