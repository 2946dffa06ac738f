/** The probe cache: a good probe is kept for its ttl (on disk too), a failed one only briefly and only in memory. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import type { ProbeReportV1 } from '../spec/backend/v1/backend-v1.js';
import { cachedProbe, FAILED_PROBE_TTL_MS } from './probe-cache.js';

let state: string;
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'yonder-probe-cache-'));
  vi.useFakeTimers({ toFake: ['Date'] });
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(state, { recursive: true, force: true });
});

function counting(reports: ProbeReportV1[]): {
  probe: () => Promise<ProbeReportV1>;
  calls: () => number;
} {
  let calls = 0;
  return {
    probe: async () => reports[Math.min(calls++, reports.length - 1)] as ProbeReportV1,
    calls: () => calls,
  };
}

const DOWN: ProbeReportV1 = { ok: false, facts: {}, problems: ['host unreachable'] };
const UP: ProbeReportV1 = { ok: true, facts: { home: '/home/u' }, problems: [] };

it('a failed probe is asked again once FAILED_PROBE_TTL_MS has passed, though the ttl is long, and never written to disk', async () => {
  const key = `down-then-up-${Math.random()}`;
  const target = counting([DOWN, UP]);
  const hour = 3_600_000;
  expect(await cachedProbe(state, key, hour, false, target.probe)).toEqual(DOWN);
  expect(await cachedProbe(state, key, hour, false, target.probe)).toEqual(DOWN);
  expect(target.calls()).toBe(1);
  expect(readdirSync(state)).toEqual([]);
  vi.setSystemTime(Date.now() + FAILED_PROBE_TTL_MS);
  expect(await cachedProbe(state, key, hour, false, target.probe)).toEqual(UP);
  expect(target.calls()).toBe(2);
  // The good one is kept for the whole ttl.
  vi.setSystemTime(Date.now() + hour - 1);
  expect(await cachedProbe(state, key, hour, false, target.probe)).toEqual(UP);
  expect(target.calls()).toBe(2);
  expect(readdirSync(join(state, 'cache'))).toHaveLength(1);
});
