/**
 * Reliability suite, part 4 on the real Slurm cluster (submits only; nothing is stopped):
 * hostile argv, names, env, settings, working directories and workdirs through sbatch; a
 * secret that never shows in any argv; and the scheduler directives yonder reserves.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSlurmBackend } from '@yonder/backend-slurm';
import {
  createLocalTransport,
  createRegistry,
  JobManager,
  type JobRecord,
  type JsonObject,
} from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { hostileString, requireCliBuild, requireSlurm, until } from '@yonder/test-helpers';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cleanupAll, filesContaining, scratch, startScanner, summary } from './harness.js';
import {
  assertNoCanary,
  DUMP,
  dumpDone,
  ENV_NAMES,
  homeCanaries,
  hostileComponent,
  joinOut,
  readDump,
} from './hostile.js';

const TOKEN = `yonder-canary-${process.pid}-slurm`;
let CANARY = '';
let canaries: string[] = [];
let manager: JobManager;
let state = '';

beforeAll(() => {
  requireCliBuild();
  requireSlurm();
  CANARY = join(scratch('slurm-canary'), 'CANARY');
  canaries = [CANARY, ...homeCanaries(TOKEN)];
  state = scratch('slurm-hostile-state');
  manager = new JobManager({
    store: createFsStore({ location: state }),
    registry: createRegistry({
      backends: [createSlurmBackend()],
      transports: { local: () => createLocalTransport() },
    }),
    stateDirectory: state,
    minPollIntervalMs: 0,
  });
});

afterAll(async () => {
  if (!manager) {
    cleanupAll();
    return;
  }
  // Leave nothing queued on the shared cluster.
  const { jobs } = await manager.list({ refresh: false });
  const active = jobs.filter((job) => !['succeeded', 'failed', 'cancelled'].includes(job.state));
  if (active.length > 0)
    await manager.cancel(
      active.map((job) => job.id),
      { waitMs: 20_000 },
    );
  await manager.close();
  cleanupAll();
});

/** A workdir component a Slurm profile accepts: no `%` and no backslash (both refused). */
const slurmComponent = () => hostileComponent(TOKEN).map((value) => value.replace(/[%\\]/g, '_'));

it('hostile argv, name, env, settings, cwd and workdir reach a Slurm job byte for byte; a secret shows in no argv', async () => {
  const out = scratch('slurm-hostile-out');
  const base = scratch('slurm-hostile-base');
  const samples = fc.sample(
    fc.record({
      args: fc.array(hostileString(CANARY), { maxLength: 5 }),
      name: hostileString(CANARY, { lineBreaks: false }).filter(
        (name) => name.trim() !== '' && name.length <= 200,
      ),
      env: fc.dictionary(fc.constantFrom(...ENV_NAMES), hostileString(CANARY)),
      settings: fc.option(
        fc.dictionary(hostileString(CANARY, { maxParts: 3 }), hostileString(CANARY)),
        { nil: undefined },
      ),
      cwd: fc.option(slurmComponent(), { nil: undefined }),
      workdir: slurmComponent(),
    }),
    { numRuns: 6 },
  );
  const secret = `slurm-secret-${Math.random().toString(16).slice(2)}`;
  const scanner = startScanner(out, [secret]);
  const submitted: Array<{
    job: JobRecord;
    dump: string;
    input: (typeof samples)[number];
    cwd?: string;
    words: string[];
  }> = [];
  for (const [index, input] of samples.entries()) {
    const workdir = join(base, `${index}-${input.workdir}`);
    await manager.saveProfile({ name: `hpc ${index}`, backend: 'slurm', workdir });
    const dump = joinOut(out, index);
    const cwd = input.cwd === undefined ? undefined : join(base, `cwd-${index}-${input.cwd}`);
    if (cwd) mkdirSync(cwd);
    const words = [...input.args, ...(input.settings === undefined ? [] : ['{settings}'])];
    const job = await manager.submit(
      {
        argv: ['sh', '-c', DUMP, 'dump', dump, ...words],
        name: input.name,
        env: input.env,
        secrets: { YONDER_TEST_SECRET: secret },
        resources: { time: '2' },
        ...(input.settings === undefined ? {} : { settings: input.settings as JsonObject }),
        ...(cwd === undefined ? {} : { cwd }),
      },
      { profile: `hpc ${index}` },
    );
    expect(job.data.jobDir).toBe(join(workdir, job.id));
    submitted.push({ job, dump, input, words, ...(cwd === undefined ? {} : { cwd }) });
  }
  const submittedAt = Date.now();
  // Scan while sbatch ran and while the first job holds the secret, then free the CPU.
  await until(() => dumpDone(submitted[0]?.dump as string), 60_000, 'the first Slurm job');
  const scan = await scanner.stop();
  const { jobs, timedOut } = await manager.wait(
    submitted.map(({ job }) => job.id),
    { timeoutMs: 90_000 },
  );
  const ranFor = (Date.now() - submittedAt) / 1000;
  expect(timedOut).toBe(false);
  expect(jobs.map((job) => `${job.id} ${job.state} ${job.reason ?? ''}`)).toEqual(
    jobs.map((job) => `${job.id} succeeded `),
  );
  for (const { job, dump, input, words, cwd } of submitted) {
    await until(() => dumpDone(dump), 10_000, `Slurm job ${job.id}'s dump`);
    const seen = readDump(dump);
    const settingsPath = `${job.data.jobDir}/settings.json`;
    expect(seen.argv).toEqual(
      input.settings === undefined
        ? words
        : words.map((w) => w.split('{settings}').join(settingsPath)),
    );
    for (const [name, value] of Object.entries(input.env)) expect(seen.env[name]).toBe(value);
    expect(seen.env.YONDER_TEST_SECRET).toBe(secret);
    expect(seen.cwd).toBe(cwd ?? process.cwd());
    if (input.settings !== undefined)
      expect(JSON.parse(readFileSync(settingsPath, 'utf8'))).toEqual(input.settings);
    expect(filesContaining(String(job.data.jobDir), secret)).toEqual([]);
  }
  expect(scan.hits).toEqual([]);
  expect(filesContaining(state, secret)).toEqual([]);
  assertNoCanary(canaries, 'Slurm jobs');
  summary(
    `hostile input through Slurm: ${samples.length} real sbatch jobs with hostile argv/name/env/settings/cwd/workdir arrived byte for byte and succeeded (${ranFor.toFixed(1)} s); secret in 0 of ${scan.scans} argv scans, 0 files; canaries 0`,
  );
}, 150_000);

// Regression (found by this suite, fixed in 7d65569): the reserved-option check matched whole
// option names only, but sbatch (getopt_long) takes any unambiguous prefix of a long option and
// grouped short options: `--job-n=x`, `-vJx`, `--comm=x`, `--chd=/x` overrode the job name, the
// comment marker and the directory; a renamed job no longer matched its squeue/sacct rows and
// was declared failed/lost after three polls while it ran.
it('scheduler options cannot override the options yonder reserves (abbreviated or grouped)', async () => {
  const workdir = scratch('slurm-reserved');
  await manager.saveProfile({ name: 'reserved', backend: 'slurm', workdir });
  const accepted: string[] = [];
  for (const options of [['--job-n=evil'], ['-vJevil'], ['--comm=evil'], ['--chd=/tmp']]) {
    const outcome = await manager
      .submit({ argv: ['true'], schedulerOptions: options }, { profile: 'reserved' })
      .then(
        (job) => job,
        (error: { code: string }) => error,
      );
    if ('id' in outcome) accepted.push(`${options[0]} → job ${outcome.externalId}`);
    else expect(outcome.code).toBe('E_INVALID_JOB_SPEC');
  }
  // What an accepted override does: the renamed job is lost to yonder.
  const renamed = (await manager.list({ all: true, refresh: false })).jobs.find(
    (job) => job.spec.schedulerOptions[0] === '--job-n=evil',
  );
  if (accepted.length > 0 && renamed) {
    for (let poll = 0; poll < 3; poll += 1)
      await manager.refresh({ force: true, ids: [renamed.id] });
    const after = await manager.store.getJob(renamed.id);
    summary(
      `reserved sbatch options bypassed: ${accepted.join(', ')}; the --job-n job is now ${after?.state}/${after?.reason}`,
    );
  }
  expect(accepted).toEqual([]);
}, 60_000);

// Regression (found by this suite, fixed in 366dc51): a Slurm workdir refused `%` but not `\`,
// which Slurm removes from --output paths (it disables %-patterns), so
// `--output=<workdir>/<id>/job.log` named another directory and every job on the profile
// failed at launch (ExitCode 0:53, reported as an infrastructure failure "job launch failed
// (I/O setup)"). Either outcome passes: the profile refused, or the job succeeds.
it('a Slurm workdir with a backslash is refused, or its jobs run', async () => {
  const workdir = join(scratch('slurm-backslash'), 'a\\b');
  const issues = await manager.validateProfile({ name: 'bs', backend: 'slurm', workdir });
  if (issues.length > 0) return;
  await manager.saveProfile({ name: 'bs', backend: 'slurm', workdir });
  const job = await manager.submit({ argv: ['true'] }, { profile: 'bs' });
  const { jobs } = await manager.wait([job.id], { timeoutMs: 60_000 });
  summary(
    `Slurm workdir with a backslash: the job ended ${jobs[0]?.state} (${jobs[0]?.reason}, ${jobs[0]?.failureKind})`,
  );
  expect(jobs[0]?.state).toBe('succeeded');
}, 90_000);
