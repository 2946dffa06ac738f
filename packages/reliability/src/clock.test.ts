/**
 * Reliability suite: a wall clock stepped back under a running command (NTP, a VM resumed, an
 * admin's `date -s`). Deadlines run on monotonic time, so `wait --timeout 5` ends after about
 * five seconds whatever the wall clock does. libfaketime steps the CLI's wall clock only
 * (FAKETIME_DONT_FAKE_MONOTONIC), as a real step does.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireCliBuild, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cleanupAll, readJob, scratch, summary } from './harness.js';

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

beforeAll(() => {
  requireCliBuild();
  if (!existsSync(LIBFAKETIME))
    throw new Error(
      `${LIBFAKETIME} is missing: run scripts/test-all.sh as root (it installs faketime)`,
    );
});
afterAll(() => cleanupAll());

it('wait --timeout 5 ends on time while the wall clock keeps stepping back', async () => {
  const state = scratch('clock');
  const offsetFile = join(scratch('clock-offset'), 'offset');
  writeFileSync(offsetFile, '+0\n');
  const submitted = await runCli(['submit', '--', 'sleep', '120'], { state });
  expect(submitted.code, submitted.stderr).toBe(0);
  const id = submitted.stdout.trim();
  // For the first 20 s the wall clock falls back 10 s every 200 ms: a deadline measured on it
  // could not pass before the stepping stops.
  let offset = 0;
  const stepping = setInterval(() => {
    offset -= 10;
    writeFileSync(offsetFile, `${offset}\n`);
  }, 200);
  const stopStepping = setTimeout(() => clearInterval(stepping), 20_000);
  let cancelled: Awaited<ReturnType<typeof runCli>> | undefined;
  try {
    const waited = await runCli(['wait', '--timeout', '5', id], {
      state,
      timeoutMs: 90_000,
      env: {
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME_TIMESTAMP_FILE: offsetFile,
        FAKETIME_NO_CACHE: '1',
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      },
    });
    const steppedBack = -offset;
    expect(waited.code, waited.stderr).toBe(124);
    // Ended while the clock was still being stepped back, so by monotonic time.
    expect(waited.ms).toBeLessThan(20_000);
    summary(
      `clock stepped back ${steppedBack} s during wait --timeout 5: exit 124 after ${waited.ms} ms`,
    );
  } finally {
    clearInterval(stepping);
    clearTimeout(stopStepping);
    cancelled = await runCli(['cancel', id], { state, timeoutMs: 90_000 });
  }
  // The cancel's own answer in the message: a record left otherwise says why.
  expect(
    readJob(state, id).state,
    `cancel exit ${cancelled?.code}: ${cancelled?.stdout} ${cancelled?.stderr}`,
  ).toBe('cancelled');
}, 120_000);
