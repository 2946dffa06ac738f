import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProbeReportV1 } from '../spec/backend/v1/backend-v1.js';

const memory = new Map<string, { at: number; report: ProbeReportV1 }>();

/**
 * A backend's probe (what the target is: versions, home directory…), cached in memory and
 * under `<state>/cache/` for `ttlMs`, so that each short-lived `yonder` process does not
 * ask again. Only successful probes are written to disk.
 */
export async function cachedProbe(
  stateDirectory: string,
  key: string,
  ttlMs: number,
  fresh: boolean,
  probe: () => Promise<ProbeReportV1>,
): Promise<ProbeReportV1> {
  const file = join(
    stateDirectory,
    'cache',
    `probe-${createHash('sha256').update(key).digest('hex').slice(0, 20)}.json`,
  );
  if (!fresh) {
    const cached = memory.get(file);
    if (cached && Date.now() - cached.at < ttlMs) return cached.report;
    try {
      const stored = JSON.parse(readFileSync(file, 'utf8')) as {
        at: number;
        report: ProbeReportV1;
      };
      if (Date.now() - stored.at < ttlMs && stored.report.ok) {
        memory.set(file, stored);
        return stored.report;
      }
    } catch {
      /* nothing cached */
    }
  }
  const report = await probe();
  const entry = { at: Date.now(), report };
  memory.set(file, entry);
  if (report.ok) {
    try {
      mkdirSync(join(stateDirectory, 'cache'), { recursive: true, mode: 0o700 });
      writeFileSync(file, JSON.stringify(entry), { mode: 0o600 });
    } catch {
      /* the cache only saves time */
    }
  }
  return report;
}
