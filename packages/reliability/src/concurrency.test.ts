/**
 * Reliability suite, part 1: concurrency. Many yonder processes share one ledger: every job
 * is recorded exactly once, no record is lost or torn, every job reaches a terminal state,
 * and processes refreshing at the same moment share one poll per target.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type BackendV1,
  createLocalBackend,
  createLocalTransport,
  createRegistry,
  JobManager,
} from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import {
  JOB_GONE_MS,
  jobProcessesGone,
  requireCliBuild,
  runCliJson,
  until,
  untilJobGone,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanupAll,
  DIST,
  readRecords,
  scratch,
  summary,
  TERMINAL,
  workerScript,
} from './harness.js';

beforeAll(() => requireCliBuild());
afterAll(() => cleanupAll());

/**
 * A yonder CLI process that runs `yonder submit` COUNT times (the CLI's own `main`, a fresh
 * runtime and ledger handle per command, exactly as bin.js does once), printing one JSON line
 * per submit. Every 10th job is a `sleep 3600` for the cancellers (long enough that it never ends by itself before its cancel, however loaded the machine); the others append their id
 * to the shared marker file, so a job that ran twice would show twice.
 */
const SUBMITTER = `import { main } from ${JSON.stringify(DIST.cli)};
const [count, shared, tag, startAt] = process.argv.slice(2);
while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 5));
for (let i = 0; i < Number(count); i += 1) {
  const sleeper = i % 10 === 9;
  const argv = sleeper
    ? ['submit', '--name', 'sleeper-' + tag + '-' + i, '--', 'sleep', '3600']
    : ['submit', '--name', 'marker-' + tag + '-' + i, '--', 'sh', '-c', 'printf "%s\\\\n" "$YONDER_JOB_ID" >> "$1"', 'marker', shared];
  let out = '';
  let err = '';
  const code = await main(argv, {
    stdout: (t) => { out += t; },
    stderr: (t) => { err += t; },
    color: false,
    env: process.env,
    cwd: process.cwd(),
  });
  process.stdout.write(JSON.stringify({ i, code, id: out.trim(), sleeper, err: err.trim() }) + '\\n');
}
`;

describe('concurrency', () => {
  it('16 processes × 50 submits with concurrent list/refresh/cancel: every job recorded once, none lost or torn, all terminal', async () => {
    const state = scratch('conc-state');
    const work = scratch('conc-work');
    const shared = join(work, 'markers');
    const script = workerScript(work, 'submitter.mjs', SUBMITTER);
    const PROCESSES = 16;
    const PER_PROCESS = 50;
    const started = Date.now();
    const startAt = started + 2_500;
    const env = {
      ...process.env,
      YONDER_STATE_DIR: state,
      NO_COLOR: '1',
      YONDER_PROFILE: '',
      XDG_CONFIG_HOME: join(work, 'no-config'),
    };

    const printed: Array<{ id: string; code: number; sleeper: boolean; err: string }> = [];
    const cancelQueue: string[] = [];
    let submittersDone = 0;
    const submitters = Array.from({ length: PROCESSES }, (_, index) => {
      const child = spawn(
        process.execPath,
        [script, String(PER_PROCESS), shared, String(index), String(startAt)],
        { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let buffer = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        let at = buffer.indexOf('\n');
        while (at >= 0) {
          const line = JSON.parse(buffer.slice(0, at));
          buffer = buffer.slice(at + 1);
          printed.push(line);
          if (line.sleeper && line.code === 0) cancelQueue.push(line.id);
          at = buffer.indexOf('\n');
        }
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      return new Promise<{ code: number | null; stderr: string }>((resolve) =>
        child.on('close', (code) => {
          submittersDone += 1;
          resolve({ code, stderr });
        }),
      );
    });
    const running = (): boolean => submittersDone < PROCESSES;

    // Listers: real `yonder list` processes (with refresh), and full listings, all the while.
    const listFailures: string[] = [];
    let lists = 0;
    const listers = Array.from({ length: 4 }, async (_, lane) => {
      while (Date.now() < startAt) await sleep(50);
      for (let round = 0; running(); round += 1) {
        const args = (round + lane) % 2 === 0 ? ['list'] : ['list', '--all', '--no-refresh'];
        // Correctness is judged here, not speed: with sixteen submitters and their jobs on two
        // cores, one refreshing list can take well over a minute of wall time.
        const result = await runCliJson(args, { state, cwd: work, timeoutMs: 170_000 });
        lists += 1;
        if (result.code !== 0 || result.doc.ok !== true)
          listFailures.push(`${args.join(' ')}: ${result.stdout} ${result.stderr}`);
        if (/warning/i.test(result.stderr))
          listFailures.push(`${args.join(' ')} warned: ${result.stderr}`);
        for (const job of result.doc.result ?? [])
          if (typeof job.id !== 'string' || typeof job.state !== 'string')
            listFailures.push(`torn job in listing: ${JSON.stringify(job).slice(0, 200)}`);
      }
    });

    // Cancellers: `yonder cancel` on the sleepers as soon as they are printed.
    const cancelFailures: string[] = [];
    let cancelCommands = 0;
    const cancellers = Array.from({ length: 2 }, async () => {
      while (running() || cancelQueue.length > 0) {
        const batch = cancelQueue.splice(0, 5);
        if (batch.length === 0) {
          await sleep(100);
          continue;
        }
        const result = await runCliJson(['cancel', ...batch], {
          state,
          cwd: work,
          timeoutMs: 170_000,
        });
        cancelCommands += 1;
        if (result.code !== 0 || result.doc.ok !== true)
          cancelFailures.push(`cancel ${batch.join(' ')}: ${result.stdout} ${result.stderr}`);
        else
          for (const job of result.doc.result)
            if (job.state !== 'cancelled')
              cancelFailures.push(
                `cancel left ${job.id} ${job.state} (${job.reason}, exit ${job.exitCode}, signal ${job.signal}): ${JSON.stringify({ cancel: job.cancel, history: job.history, finishedAt: job.finishedAt })}`,
              );
      }
    });

    const exits = await Promise.all(submitters);
    await Promise.all([...listers, ...cancellers]);
    const loadSeconds = (Date.now() - startAt) / 1000;
    for (const exit of exits) expect(exit.code, exit.stderr).toBe(0);
    expect(listFailures).toEqual([]);
    expect(cancelFailures).toEqual([]);

    // Every submit printed an id, once.
    const total = PROCESSES * PER_PROCESS;
    expect(printed).toHaveLength(total);
    expect(printed.filter((line) => line.code !== 0)).toEqual([]);
    const ids = printed.map((line) => line.id);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(total);

    // A final refresh until nothing is active (the marker jobs finish at once).
    const wait = await runCliJson(['wait', '--timeout', '60', ...ids], {
      state,
      cwd: work,
      timeoutMs: 90_000,
    });
    expect(wait.doc.ok, wait.stdout + wait.stderr).toBe(true);

    // Every job recorded exactly once, every record parses, every job terminal.
    const records = readRecords(state);
    const torn = records.filter((record) => record.job === null);
    expect(torn.map((record) => `${record.path}: ${record.error}`)).toEqual([]);
    const recorded = records.map((record) => record.job.id as string);
    expect(recorded).toHaveLength(total);
    expect(new Set(recorded)).toEqual(new Set(ids));
    const byId = new Map(records.map((record) => [record.job.id as string, record.job]));
    const sleepers = new Set(printed.filter((line) => line.sleeper).map((line) => line.id));
    const wrong: string[] = [];
    for (const [id, job] of byId) {
      const expected = sleepers.has(id) ? 'cancelled' : 'succeeded';
      if (job.state !== expected) wrong.push(`${id} ${job.state} (expected ${expected})`);
      if (!TERMINAL.has(job.state)) wrong.push(`${id} not terminal`);
    }
    expect(wrong).toEqual([]);
    // The cancels' effect, not only their records: nothing of any sleeper is left.
    const sleeperPids = [...sleepers].map((id) => byId.get(id).data.pid as number);
    await until(() => sleeperPids.every(jobProcessesGone), JOB_GONE_MS, 'the sleepers to be gone');

    // Each marker job ran exactly once; no sleeper wrote a marker.
    const markers = readFileSync(shared, 'utf8').split('\n').filter(Boolean);
    const counts = new Map<string, number>();
    for (const marker of markers) counts.set(marker, (counts.get(marker) ?? 0) + 1);
    const markerJobs = ids.filter((id) => !sleepers.has(id));
    expect(markerJobs.filter((id) => counts.get(id) !== 1)).toEqual([]);
    expect(markers).toHaveLength(markerJobs.length);

    // The creation index lists every job once; nothing is left marked active.
    const index = readFileSync(join(state, 'index.log'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t')[1]);
    expect(index).toHaveLength(total);
    expect(new Set(index)).toEqual(new Set(ids));
    expect(readdirSync(join(state, 'active'))).toEqual([]);
    const all = await runCliJson(['list', '--all', '--no-refresh'], { state, cwd: work });
    expect(all.doc.result).toHaveLength(total);

    summary(
      `concurrency: ${PROCESSES} submitting processes × ${PER_PROCESS} = ${total} jobs in ${loadSeconds.toFixed(1)} s, ` +
        `with ${lists} concurrent list/refresh processes and ${cancelCommands} cancel processes (${sleepers.size} jobs cancelled); ` +
        `recorded ${recorded.length}/${total} once each, torn 0, lost 0, duplicate runs 0, all terminal`,
    );
  }, 420_000);

  it('8 processes refreshing at the same moment share one poll per target per cycle', async () => {
    const state = scratch('share-state');
    const work = scratch('share-work');
    const counts = join(work, 'polls');
    // Each process: a JobManager on the shared ledger whose local backend counts its polls
    // (one line per poll, appended atomically) and takes 150 ms to answer, like a scheduler.
    const script = workerScript(
      work,
      'refresher.mjs',
      `import { appendFileSync } from 'node:fs';
import { createLocalBackend, createLocalTransport, createRegistry, JobManager } from ${JSON.stringify(DIST.core)};
import { createFsStore } from ${JSON.stringify(DIST.storeFs)};
const [state, counts, startAt, rounds, cycleMs] = process.argv.slice(2);
const inner = createLocalBackend();
let current = -1;
const backend = {
  ...inner,
  async poll(jobs, context) {
    appendFileSync(counts, current + ' ' + Date.now() + ' ' + jobs.length + '\\n');
    await new Promise((r) => setTimeout(r, 150));
    return inner.poll(jobs, context);
  },
};
const manager = new JobManager({
  store: createFsStore({ location: state }),
  registry: createRegistry({ backends: [backend], transports: { local: () => createLocalTransport() } }),
  stateDirectory: state,
});
const log = [];
for (let round = 0; round < Number(rounds); round += 1) {
  const at = Number(startAt) + round * Number(cycleMs);
  while (Date.now() < at) await new Promise((r) => setTimeout(r, Math.min(5, at - Date.now())));
  const begun = Date.now();
  current = round;
  await manager.refresh();
  log.push({ round, begun, ended: Date.now() });
}
await manager.close();
process.stdout.write(JSON.stringify(log));
`,
    );

    // Six running jobs on the one local target.
    const manager = new JobManager({
      store: createFsStore({ location: state }),
      registry: createRegistry({
        backends: [createLocalBackend()],
        transports: { local: () => createLocalTransport() },
      }),
      stateDirectory: state,
      minPollIntervalMs: 0,
    });
    const jobs = [];
    for (let index = 0; index < 6; index += 1)
      jobs.push(await manager.submit({ argv: ['sleep', '60'] }));
    // The first poll of a job records its start (startedAt): done here, so that every round's
    // refresh takes as long as the next one, and none ends so late that the next round's poll
    // falls within the minimum interval.
    await manager.refresh({ force: true });

    const PROCESSES = 8;
    const ROUNDS = 5;
    const CYCLE_MS = 1_250;
    const startAt = Date.now() + 2_000;
    const outputs = await Promise.all(
      Array.from(
        { length: PROCESSES },
        () =>
          new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
            const child = spawn(
              process.execPath,
              [script, state, counts, String(startAt), String(ROUNDS), String(CYCLE_MS)],
              { stdio: ['ignore', 'pipe', 'pipe'] },
            );
            let stdout = '';
            let stderr = '';
            child.stdout.on('data', (chunk) => {
              stdout += chunk;
            });
            child.stderr.on('data', (chunk) => {
              stderr += chunk;
            });
            child.on('close', (code) => resolve({ code, stdout, stderr }));
          }),
      ),
    );
    for (const output of outputs) expect(output.code, output.stderr).toBe(0);
    const refreshes = outputs.flatMap((output) => JSON.parse(output.stdout));
    expect(refreshes).toHaveLength(PROCESSES * ROUNDS);
    // The rounds in which every process really refreshed at the same moment as the others (a
    // machine loaded enough can start one of them late): those are the ones the sharing is
    // judged by, and most rounds must be such.
    const together = Array.from({ length: ROUNDS }, (_, round) => {
      const begun = refreshes.filter((r) => r.round === round).map((r) => r.begun);
      return Math.max(...begun) - Math.min(...begun) < 500;
    });
    expect(
      together.filter(Boolean).length,
      `rounds whose refreshes began within 500 ms of each other: ${together}`,
    ).toBeGreaterThanOrEqual(3);
    const polls = readFileSync(counts, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ').map(Number) as [number, number, number]);
    // Counted by the round of the refresh that polled, not by wall-clock windows: on a loaded
    // machine a round's poll may start late, but it still serves that round.
    const perRound = Array.from(
      { length: ROUNDS },
      (_, round) => polls.filter(([polledIn]) => polledIn === round).length,
    );
    // One batched poll of all six jobs per cycle, not one per process (8) nor per job.
    for (const [, , size] of polls) expect(size).toBe(6);
    expect(perRound.every((count) => count >= 1)).toBe(true);
    expect(perRound.filter((_, round) => together[round]).every((count) => count <= 2)).toBe(true);
    if (together.every(Boolean)) expect(polls.length).toBeLessThanOrEqual(ROUNDS + 1);

    // Control: the counter does count. One process forcing 8 refreshes in a row polls 8 times.
    let controlPolls = 0;
    const inner = createLocalBackend();
    const counting: BackendV1 = {
      ...inner,
      async poll(list, context) {
        controlPolls += 1;
        return inner.poll(list, context);
      },
    };
    const control = new JobManager({
      store: createFsStore({ location: state }),
      registry: createRegistry({
        backends: [counting],
        transports: { local: () => createLocalTransport() },
      }),
      stateDirectory: state,
    });
    for (let index = 0; index < PROCESSES; index += 1) await control.refresh({ force: true });
    expect(controlPolls).toBe(PROCESSES);
    await control.close();

    const cancelled = await manager.cancel(
      jobs.map((job) => job.id),
      { waitMs: 15_000 },
    );
    expect(cancelled.map((job) => job.state)).toEqual(jobs.map(() => 'cancelled'));
    for (const job of jobs) await untilJobGone(Number(job.data.pid));
    await manager.close();
    expect(existsSync(counts)).toBe(true);
    summary(
      `poll sharing: ${PROCESSES} processes × ${ROUNDS} simultaneous refreshes (${PROCESSES * ROUNDS} refresh calls) made ${polls.length} polls ` +
        `(per cycle: ${perRound.join(', ')}), each batching all 6 jobs; control without sharing: ${controlPolls} refreshes → ${controlPolls} polls`,
    );
  }, 120_000);
});
