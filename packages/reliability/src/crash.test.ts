/**
 * Reliability suite, part 2: crashes. yonder is killed with SIGKILL at random points of
 * submit, refresh (`yonder list`) and cancel, 300 times, three lanes at once on one ledger.
 * Afterwards the ledger is readable and untorn, no stale lock blocks progress, a submit
 * interrupted after its job started is recovered (through the job directory's wrapper.pid)
 * and runs exactly once, and a job that never started ends `failed` / `submit-interrupted`.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLocalBackend, createLocalTransport, createRegistry, JobManager } from '@yonder/core';
import { JOB_WRAPPER_SCRIPT, readBootId } from '@yonder/core/backend-kit';
import { createFsStore } from '@yonder/store-fs';
import {
  collectProcess,
  JOB_GONE_MS,
  jobProcessesGone,
  type Raw,
  requireCliBuild,
  runCli,
  runCliJson,
  spawnCli,
  submitGraceMs,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  cleanupAll,
  fileSize,
  lockFiles,
  readJob,
  readRecords,
  rewriteRecord,
  scratch,
  summary,
  TERMINAL,
} from './harness.js';

beforeAll(() => requireCliBuild());
afterAll(() => cleanupAll());

const KILLS_PER_LANE = 100;
const SLEEPERS = 40;
/**
 * The local backend leaves an interrupted submit whose wrapper never wrote its pid
 * `submitting` until this long after the job's creation: recovery cannot finish sooner.
 */
const SUBMIT_GRACE_MS = submitGraceMs(createLocalBackend());
/** Beyond that grace, time for the refreshes that settle the jobs, on a loaded machine. */
const REFRESH_MARGIN_MS = 30_000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

it(
  '300 SIGKILLs during submit, refresh and cancel: ledger readable, nothing torn, no stale lock, interrupted submits reconciled',
  async () => {
    const state = scratch('crash-state');
    const work = scratch('crash-work');
    const shared = join(work, 'markers');
    writeFileSync(shared, '');
    const cli = { state, cwd: work };
    const markerJob = ['sh', '-c', 'printf "%s\\n" "$YONDER_JOB_ID" >> "$1"', 'marker', shared];

    // Long jobs for the cancel lane, submitted by a manager on the same ledger.
    const manager = new JobManager({
      store: createFsStore({ location: state }),
      registry: createRegistry({
        backends: [createLocalBackend()],
        transports: { local: () => createLocalTransport() },
      }),
      stateDirectory: state,
    });
    const sleepers: string[] = [];
    for (let index = 0; index < SLEEPERS; index += 1)
      sleepers.push((await manager.submit({ argv: ['sleep', '300'], name: 'sleeper' })).id);
    await manager.close();

    // How long each command takes here, three at once (the lanes run concurrently).
    const timings = { submit: [] as number[], list: [] as number[], cancel: [] as number[] };
    const calibration: string[] = [];
    for (let round = 0; round < 3; round += 1) {
      const [submit, list] = await Promise.all([
        runCli(['submit', '--name', 'calibrate', '--', ...markerJob], cli),
        runCli(['list'], cli),
        runCli(['list', '--all', '--no-refresh'], cli),
      ]);
      timings.submit.push(submit.ms);
      timings.list.push(list.ms);
      calibration.push(submit.stdout.trim());
    }
    const victim = sleepers.pop() as string;
    const cancelled = await runCli(['cancel', victim], cli);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    timings.cancel.push(cancelled.ms);
    const calibrated = {
      submit: median(timings.submit),
      list: median(timings.list),
      cancel: median(timings.cancel),
    };
    const duration = { ...calibrated };

    // Torn-read watcher: scans every record while the lanes run.
    let scans = 0;
    const tornSeen: string[] = [];
    let lanesDone = false;
    const watcher = (async () => {
      while (!lanesDone) {
        for (const record of readRecords(state))
          if (record.job === null) tornSeen.push(`${record.path}: ${record.error}`);
        scans += 1;
        await sleep(100);
      }
    })();

    const kills = { submit: 0, list: 0, cancel: 0 };
    const finished = { submit: 0, list: 0, cancel: 0 };
    const triggered = { submit: 0, list: 0, cancel: 0 };
    const spawnedSubmits: number[] = [];
    // The store's own files tell when a command is inside its critical part: a submit creates
    // the job's active marker, a refresh takes the poll lease, a cancel takes the job's lock.
    const watched = { submit: 'active', list: 'leases', cancel: 'locks' } as const;
    const armed: Partial<Record<keyof typeof watched, () => void>> = {};
    const watchers = (Object.keys(watched) as Array<keyof typeof watched>).map((kind) =>
      watch(join(state, watched[kind]), (_event, name) => {
        if (name && !String(name).startsWith('.') && existsSync(join(state, watched[kind], name)))
          armed[kind]?.();
      }),
    );
    const lane = async (kind: 'submit' | 'list' | 'cancel'): Promise<void> => {
      // Until the lane has its kills (a command that finishes before its kill does not count).
      for (let index = 0; kills[kind] < KILLS_PER_LANE && index < KILLS_PER_LANE * 3; index += 1) {
        const args =
          kind === 'submit'
            ? ['submit', '--name', `crash-${index}`, '--', ...markerJob]
            : kind === 'list'
              ? ['list']
              : ['cancel', sleepers[Math.floor(Math.random() * sleepers.length)] as string];
        const child = spawnCli(args, cli);
        if (kind === 'submit') spawnedSubmits.push(index);
        const done = collectProcess(child);
        let timer: NodeJS.Timeout;
        if (index % 2 === 0) {
          // Timed: anywhere from node's start-up to the end of a typical run.
          timer = setTimeout(
            () => child.kill('SIGKILL'),
            Math.round(duration[kind] * (0.3 + Math.random() * 0.75)),
          );
        } else {
          // Triggered: 0–15 ms after the command touched the store (or at the end of a run).
          timer = setTimeout(() => child.kill('SIGKILL'), duration[kind] * 1.1);
          armed[kind] = () => {
            armed[kind] = undefined;
            triggered[kind] += 1;
            clearTimeout(timer);
            timer = setTimeout(() => child.kill('SIGKILL'), Math.random() * 15);
          };
        }
        const result = await done;
        armed[kind] = undefined;
        clearTimeout(timer);
        if (result.signal === 'SIGKILL') kills[kind] += 1;
        else {
          // It ran faster than estimated (less load now): aim earlier from now on.
          finished[kind] += 1;
          duration[kind] = Math.round((duration[kind] + result.ms) / 2);
        }
      }
    };
    const lanesStarted = Date.now();
    await Promise.all([lane('submit'), lane('list'), lane('cancel')]);
    const laneSeconds = (Date.now() - lanesStarted) / 1000;
    lanesDone = true;
    for (const one of watchers) one.close();
    await watcher;
    expect(tornSeen).toEqual([]);

    // No stale lock blocks progress: no lock is left that a live refresh would wait on (how
    // long the next list took is reported in the summary, not asserted: it is a speed).
    const leftLocks = lockFiles(state);
    const locksLeft = leftLocks.length;
    const emptyLocks = leftLocks.filter((path) => fileSize(path) === 0).length;
    const next = await runCliJson(['list'], cli);
    expect(next.doc.ok, next.stderr).toBe(true);
    // Locks of dead holders are broken at once. Regression (found by this suite, fixed in
    // 7d65569): a lock was created empty and filled by a second call, so a kill in between left
    // an empty lock (1-2 per run of this test) that blocked its target or job for 5 s, and the
    // refresh waiting on it returned without polling. Locks now appear whole or not at all.
    expect(emptyLocks).toBe(0);

    // Every record parses; the full listing works and warns about nothing.
    const records = readRecords(state);
    expect(records.filter((record) => record.job === null).map((record) => record.path)).toEqual(
      [],
    );
    const all = await runCliJson(['list', '--all', '--no-refresh'], cli);
    expect(all.code).toBe(0);
    expect(all.stderr).not.toMatch(/warning/i);
    expect(all.doc.result).toHaveLength(records.length);

    // Recovery: refreshes settle every interrupted submit, at the latest SUBMIT_GRACE_MS after
    // the newest of them entered the ledger; then stop the sleepers, wait for all.
    const newest = Math.max(
      Date.now(),
      ...readRecords(state)
        .filter((record) => record.job?.state === 'submitting')
        .map((record) => Date.parse(record.job.createdAt)),
    );
    await until(
      async () => {
        const listed = await runCliJson(['list', '--all'], cli);
        expect(listed.doc.ok, listed.stderr).toBe(true);
        return !listed.doc.result.some((job: Raw) => job.state === 'submitting');
      },
      newest + SUBMIT_GRACE_MS + REFRESH_MARGIN_MS - Date.now(),
      'refreshes to settle every interrupted submit',
      200,
    );
    const stop = await runCliJson(['cancel', ...sleepers], { ...cli, timeoutMs: 60_000 });
    expect(stop.doc.ok, stop.stderr).toBe(true);
    const ids = readRecords(state).map((record) => record.job.id as string);
    const wait = await runCliJson(['wait', '--timeout', '60', ...ids], {
      ...cli,
      timeoutMs: 90_000,
    });
    expect(wait.doc.ok, wait.stderr).toBe(true);

    const final = readRecords(state).map((record) => record.job);
    // The cancel's effect, not only its record: no process of any sleeper is left.
    const sleeperPids = final
      .filter((job) => job.name === 'sleeper' && typeof job.data.pid === 'number')
      .map((job) => job.data.pid as number);
    expect(sleeperPids).toHaveLength(SLEEPERS);
    await until(() => sleeperPids.every(jobProcessesGone), JOB_GONE_MS, 'the sleepers to be gone');
    const markers = readFileSync(shared, 'utf8').split('\n').filter(Boolean);
    const markerCount = new Map<string, number>();
    for (const marker of markers) markerCount.set(marker, (markerCount.get(marker) ?? 0) + 1);
    const problems: string[] = [];
    const outcome = { completed: 0, recovered: 0, interrupted: 0 };
    const racedLate = new Set<string>();
    for (const job of final) {
      if (!TERMINAL.has(job.state)) problems.push(`${job.id} ${job.name} still ${job.state}`);
      if (job.name === 'sleeper') {
        if (job.state !== 'cancelled') problems.push(`sleeper ${job.id} ended ${job.state}`);
        continue;
      }
      const ran = markerCount.get(job.id) ?? 0;
      if (job.externalId !== null) {
        // Started: ran exactly once, and the record knows it.
        if (ran !== 1) problems.push(`${job.id} started but its marker appears ${ran} times`);
        if (job.state !== 'succeeded') problems.push(`${job.id} started but ended ${job.state}`);
        if (job.history.some((t: any) => t.source === 'recover')) outcome.recovered += 1;
        else outcome.completed += 1;
      } else {
        // Never started: failed as an interrupted submit, and never ran.
        if (job.state !== 'failed' || job.reason !== 'submit-interrupted')
          problems.push(`${job.id} not started, ended ${job.state}/${job.reason}`);
        if (ran === 1 && job.state === 'failed' && job.reason === 'submit-interrupted') {
          // Called never-started while its wrapper was still on its way: the open bug of the
          // it.fails test below. Counted and reported; everything else stays strict.
          racedLate.add(job.id);
        } else if (ran !== 0)
          problems.push(`${job.id} has no externalId but ran ${ran} times (forgotten)`);
        outcome.interrupted += 1;
      }
    }
    // Every marker belongs to a job the ledger knows as started: nothing ran unrecorded.
    const started = new Set(final.filter((job) => job.externalId !== null).map((job) => job.id));
    for (const marker of markerCount.keys())
      if (!started.has(marker) && !racedLate.has(marker))
        problems.push(`marker ${marker} from a job the ledger lost`);

    const crashJobs = final.filter((job) => String(job.name).startsWith('crash-')).length;
    const neverRecorded = spawnedSubmits.length - crashJobs;
    const temporaries = readdirSync(join(state, 'jobs'), { recursive: true }).filter((name) =>
      String(name).endsWith('.tmp'),
    ).length;
    summary(
      `crashes: ${kills.submit + kills.list + kills.cancel} SIGKILLs in ${laneSeconds.toFixed(1)} s ` +
        `(submit ${kills.submit}, refresh ${kills.list}, cancel ${kills.cancel}; ${finished.submit + finished.list + finished.cancel} finished first; ` +
        `half timed at 30–105 % of a run, half 0–15 ms after the command touched the store (${triggered.submit + triggered.list + triggered.cancel} times): submit/list/cancel took ${calibrated.submit}/${calibrated.list}/${calibrated.cancel} ms unkilled); ` +
        `${scans} scans saw 0 torn records; after the crashes: ${locksLeft} lock files left (${emptyLocks} empty), next list took ${next.ms} ms; ` +
        `submits: ${neverRecorded} killed before the record, ${outcome.interrupted} never started → failed/submit-interrupted (of which ${racedLate.size} did start late: the open bug below), ` +
        `${outcome.recovered} started and recovered from wrapper.pid, ${outcome.completed} completed; problems ${problems.length}${problems.length > 0 ? ` (${problems.slice(0, 3).join('; ')})` : ''}; ` +
        `${SLEEPERS - 1} sleepers cancelled; ${temporaries} orphan .tmp files`,
    );
    expect(problems).toEqual([]);
    expect(calibration.every((id) => /^[0-9a-f]{12}$/.test(id))).toBe(true);
    expect(kills).toEqual({ submit: KILLS_PER_LANE, list: KILLS_PER_LANE, cancel: KILLS_PER_LANE });
    // The kills landed at every stage of a submit, not only before or after it.
    expect(outcome.interrupted).toBeGreaterThan(0);
    expect(outcome.recovered).toBeGreaterThan(0);
  },
  240_000 + SUBMIT_GRACE_MS,
);

// Regression (found by this suite, fixed): a job directory without wrapper.pid was taken for
// "never started" at once, although a submit killed just after spawn() leaves a wrapper that
// has not reached its first line yet; a refresh in that window marked a job that then ran
// failed / submit-interrupted. The local backend now gives the wrapper 30 s to appear.
it('a submit killed between spawning its wrapper and the wrapper’s first line is not called never-started', async () => {
  const state = scratch('crash-race');
  const work = scratch('crash-race-work');
  const cli = { state, cwd: work };
  const marker = join(work, 'ran');
  const id = (await runCli(['submit', '--', 'true'], cli)).stdout.trim();
  const jobDir = String(readJob(state, id).data.jobDir);
  await until(() => existsSync(join(jobDir, 'exit-code')), 10_000, 'the first run to end');
  // As a SIGKILL right after spawn() leaves it: the record `submitting`, its submitter gone, the
  // job directory made, the wrapper spawned but not yet at its first line.
  rewriteRecord(state, id, (job) => {
    job.state = 'submitting';
    job.externalId = null;
    job.data = {};
    job.history = job.history.slice(0, 1);
    job.submitter = { pid: 999_999, startTime: '1', bootId: readBootId(), host: hostname() };
  });
  for (const name of ['wrapper.pid', 'exit-code']) rmSync(join(jobDir, name), { force: true });
  spawn(
    'sh',
    [
      '-c',
      'sleep 1.5; exec sh -c "$0" yonder-job "$@"',
      JOB_WRAPPER_SCRIPT,
      jobDir,
      'sh',
      '-c',
      'printf ran > "$0"',
      marker,
    ],
    { detached: true, stdio: 'ignore' },
  ).unref();
  // Another process refreshes meanwhile.
  expect((await runCliJson(['list', '--all'], cli)).doc.ok).toBe(true);
  await until(
    () => existsSync(marker) && existsSync(join(jobDir, 'exit-code')),
    10_000,
    'the late wrapper to run the job',
  );
  // Refresh until the job settles (the first refresh after its last poll may come within the
  // shared poll's minimum interval, and then does not poll).
  let job: Raw;
  await until(
    async () => {
      const after = await runCliJson(['list', '--all'], cli);
      job = after.doc.result.find((one: Raw) => one.id === id);
      return TERMINAL.has(job.state);
    },
    10_000,
    'the job to settle',
    200,
  );
  summary(
    `submit killed before its wrapper's first line: the job ran (marker present); the record says ${job.state}/${job.reason}, externalId ${job.externalId}`,
  );
  expect(job.externalId).not.toBeNull();
  expect(job.state).toBe('succeeded');
}, 30_000);
