/**
 * Reliability suite, part 4: hostile input (local machine). Property tests over every field
 * that reaches a shell, a scheduler directive, a template or a path: job names, argv,
 * settings, env values, working directories and profile fields (command templates and the
 * command backend: hostile-command.test.ts; the Slurm parsers: hostile-slurm-parsers.test.ts). Real jobs run through the local
 * backend (in-process and through the CLI); their argv, env and settings must arrive byte for
 * byte, and no canary file may ever appear.
 */
import { mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createLocalBackend,
  createLocalTransport,
  createRegistry,
  JobManager,
  type JobSpec,
  type JsonObject,
} from '@yonder/core';
import {
  HOST_PATTERN,
  PROFILE_NAME_PATTERN,
  validateProfileFields,
} from '@yonder/core/backend-kit';
import { createMemoryStore } from '@yonder/core/testing';
import { createFsStore } from '@yonder/store-fs';
import { hostileString, runCli, runCliJson, until } from '@yonder/test-helpers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readJob, scratch } from './harness.js';
import {
  assertNoCanary,
  DUMP,
  dumpDone,
  expectedArgv,
  hostileComponent,
  hostileJob,
  hostileRun,
  joinOut,
  readDump,
} from './hostile.js';

const suite = hostileRun('local', 'input');

function localManager(state: string): JobManager {
  return new JobManager({
    store: createFsStore({ location: state }),
    registry: createRegistry({
      backends: [createLocalBackend()],
      transports: { local: () => createLocalTransport() },
    }),
    stateDirectory: state,
    minPollIntervalMs: 0,
  });
}

describe('real jobs through the local backend', () => {
  it('argv, name, env, settings and cwd arrive byte for byte; nothing is interpreted (JobManager)', async () => {
    const state = scratch('hostile-local');
    const out = scratch('hostile-local-out');
    const cwdBase = scratch('hostile-local-cwd');
    const manager = localManager(state);
    let run = 0;
    await fc.assert(
      fc.asyncProperty(hostileJob(suite.canary, suite.token), async (input) => {
        run += 1;
        suite.count('local-jobs');
        const dump = joinOut(out, run);
        const cwd = input.cwd === undefined ? undefined : join(cwdBase, `${run}-${input.cwd}`);
        if (cwd) mkdirSync(cwd);
        const words = [
          ...input.args,
          ...(input.settingsWords ? ['{settings}', 'x={settings}y'] : []),
        ];
        const job = await manager.submit({
          argv: ['sh', '-c', DUMP, 'dump', dump, ...words],
          name: input.name,
          env: input.env,
          ...(input.settings === undefined ? {} : { settings: input.settings as JsonObject }),
          ...(cwd === undefined ? {} : { cwd }),
        });
        await until(() => dumpDone(dump), 10_000, `run ${run} to finish`);
        const seen = readDump(dump);
        const settingsPath =
          input.settings === undefined ? null : join(String(job.data.jobDir), 'settings.json');
        expect(seen.argv).toEqual(expectedArgv(words, settingsPath));
        for (const [name, value] of Object.entries(input.env)) expect(seen.env[name]).toBe(value);
        expect(seen.env.YONDER_JOB_NAME).toBe(input.name);
        expect(seen.env.YONDER_JOB_ID).toBe(job.id);
        expect(seen.cwd).toBe(realpathSync(cwd ?? process.cwd()));
        if (settingsPath)
          expect(JSON.parse(readFileSync(settingsPath, 'utf8'))).toEqual(input.settings);
        // The ledger keeps the name and argv exactly, too.
        const stored = await manager.store.getJob(job.id);
        expect(stored?.name).toBe(input.name);
        expect(stored?.spec.argv).toEqual(['sh', '-c', DUMP, 'dump', dump, ...words]);
        assertNoCanary(suite.all, `local run ${run}`);
      }),
      { numRuns: 40 },
    );
    const { jobs } = await manager.wait(
      (await manager.list({ all: true, refresh: false })).jobs.map((job) => job.id),
      { timeoutMs: 30_000 },
    );
    expect(jobs.filter((job) => job.state !== 'succeeded')).toEqual([]);
    await manager.close();
  }, 120_000);

  it('names and paths with line breaks, NUL anywhere, bad variable names: refused before anything is recorded or run', async () => {
    const manager = new JobManager({
      store: createMemoryStore(),
      registry: createRegistry({
        backends: [createLocalBackend()],
        transports: { local: () => createLocalTransport() },
      }),
      stateDirectory: scratch('hostile-refuse'),
    });
    const refusal: fc.Arbitrary<Partial<JobSpec>> = fc.oneof(
      hostileString(suite.canary).map((value) => ({ name: `${value}\n${value}` })),
      hostileString(suite.canary).map((value) => ({ name: `a\r${value}` })),
      hostileString(suite.canary).map((value) => ({ cwd: `/tmp/${value}\n` })),
      hostileString(suite.canary).map((value) => ({ cwd: `relative/${value}` })),
      hostileString(suite.canary).map((value) => ({ argv: ['sh', `${value}\0`] })),
      hostileString(suite.canary).map((value) => ({ env: { H0: `${value}\0x` } })),
      hostileString(suite.canary).map((value) => ({ env: { [`1${value}`]: 'x' } })),
      hostileString(suite.canary, { lineBreaks: false }).map((value) => ({
        secrets: { [`${value} $`]: 'x' },
      })),
      fc.constant({ argv: [] as string[] }),
      fc.constant({ argv: [''] as string[] }),
    );
    await fc.assert(
      fc.asyncProperty(refusal, async (bad) => {
        suite.count('refusals');
        const spec: JobSpec = { argv: ['sh', '-c', `touch ${suite.canary}`], ...bad };
        await expect(manager.submit(spec)).rejects.toMatchObject({ code: 'E_INVALID_JOB_SPEC' });
      }),
      { numRuns: 100 },
    );
    expect((await manager.list({ all: true, refresh: false })).jobs).toEqual([]);
    assertNoCanary(suite.all, 'refused specs');
    await manager.close();
  }, 60_000);

  it('through the CLI (yonder submit --name= --env= --settings --cwd -- ARGV): byte for byte, no canary', async () => {
    const state = scratch('hostile-cli');
    const out = scratch('hostile-cli-out');
    const cwdBase = scratch('hostile-cli-cwd');
    const ids: string[] = [];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(hostileJob(suite.canary, suite.token), async (input) => {
        run += 1;
        suite.count('cli-jobs');
        const dump = joinOut(out, run);
        const cwd = input.cwd === undefined ? undefined : join(cwdBase, `${run}-${input.cwd}`);
        if (cwd) mkdirSync(cwd);
        const settingsFile = join(out, `settings-${run}.json`);
        if (input.settings !== undefined)
          writeFileSync(settingsFile, JSON.stringify(input.settings));
        const words = [
          ...input.args,
          ...(input.settingsWords ? ['{settings}', 'x={settings}y'] : []),
        ];
        const result = await runCli(
          [
            'submit',
            `--name=${input.name}`,
            ...Object.entries(input.env).map(([name, value]) => `--env=${name}=${value}`),
            ...(input.settings === undefined ? [] : ['--settings', settingsFile]),
            ...(cwd === undefined ? [] : [`--cwd=${cwd}`]),
            '--',
            'sh',
            '-c',
            DUMP,
            'dump',
            dump,
            ...words,
          ],
          { state, cwd: out },
        );
        expect(result.code, result.stderr).toBe(0);
        const id = result.stdout.trim();
        ids.push(id);
        await until(() => dumpDone(dump), 10_000, `CLI run ${run} to finish`);
        const record = readJob(state, id);
        const seen = readDump(dump);
        const settingsPath =
          input.settings === undefined ? null : join(String(record.data.jobDir), 'settings.json');
        expect(seen.argv).toEqual(expectedArgv(words, settingsPath));
        for (const [name, value] of Object.entries(input.env)) expect(seen.env[name]).toBe(value);
        expect(seen.env.YONDER_JOB_NAME).toBe(input.name);
        expect(seen.cwd).toBe(realpathSync(cwd ?? out));
        if (settingsPath)
          expect(JSON.parse(readFileSync(settingsPath, 'utf8'))).toEqual(input.settings);
        expect(record.name).toBe(input.name);
        assertNoCanary(suite.all, `CLI run ${run}`);
      }),
      { numRuns: 20 },
    );
    const listed = await runCliJson(['wait', '--timeout', '30', ...ids], { state, cwd: out });
    expect(listed.doc.result.jobs.map((job: any) => job.state)).toEqual(ids.map(() => 'succeeded'));
    // A program name that is itself hostile is run as a name, never parsed.
    for (const program of [`$(touch ${suite.canary})`, `;touch ${suite.canary}`, `-rf`, `a b`]) {
      suite.count('cli-programs');
      const result = await runCli(['submit', '--', program], { state, cwd: out });
      expect(result.code, result.stderr).toBe(0);
      const waited = await runCliJson(['wait', '--timeout', '20', result.stdout.trim()], {
        state,
        cwd: out,
      });
      expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 127 });
    }
    assertNoCanary(suite.all, 'hostile program names');
  }, 120_000);

  it('hostile profile fields: invalid ones are refused, valid odd workdirs are used literally', async () => {
    const state = scratch('hostile-profile');
    const manager = localManager(state);
    const base = scratch('hostile-profile-workdirs');
    await fc.assert(
      fc.asyncProperty(
        hostileString(suite.canary),
        hostileString(suite.canary),
        hostileComponent(suite.token),
        async (host, name, component) => {
          suite.count('profile-fields');
          // Host: anything accepted is a plain word that ssh can never read as an option.
          const hostIssues = validateProfileFields({ name: 'p', backend: 'ssh', host });
          if (hostIssues.length === 0) {
            expect(host).toMatch(HOST_PATTERN);
            expect(host.startsWith('-')).toBe(false);
          }
          // Name: anything accepted matches the documented pattern (no path separators).
          const nameIssues = validateProfileFields({ name, backend: 'local' });
          if (nameIssues.length === 0) expect(name).toMatch(PROFILE_NAME_PATTERN);
          else
            await expect(manager.saveProfile({ name, backend: 'local' })).rejects.toMatchObject({
              code: 'E_INVALID_PROFILE',
            });
          // Workdir with a line break, or relative: refused.
          for (const workdir of [`${base}/${component}\n`, component])
            expect(
              validateProfileFields({ name: 'p', backend: 'local', workdir }).length,
            ).toBeGreaterThan(0);
        },
      ),
      { numRuns: 200 },
    );
    // Profiles are stored as files: no name escapes the profiles directory.
    const names = fc.sample(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_. -]{0,20}$/), {
      numRuns: 30,
      seed: 7,
    });
    for (const name of new Set(names.map((n) => n.toLowerCase())))
      await manager.saveProfile({ name, backend: 'local' });
    expect(readdirSync(join(state, 'profiles')).length).toBe(
      new Set(names.map((n) => n.toLowerCase())).size,
    );
    // Valid workdirs with shell syntax: jobs run in a directory with exactly that name.
    await fc.assert(
      fc.asyncProperty(hostileComponent(suite.token), async (component) => {
        suite.count('workdirs');
        const workdir = join(base, component);
        const profile = `w${Math.random().toString(16).slice(2, 10)}`;
        await manager.saveProfile({ name: profile, backend: 'local', workdir });
        const job = await manager.submit({ argv: ['true'] }, { profile });
        expect(job.data.jobDir).toBe(join(workdir, job.id));
        expect(readdirSync(workdir)).toContain(job.id);
        const { jobs } = await manager.wait([job.id], { timeoutMs: 10_000 });
        expect(jobs[0]?.state).toBe('succeeded');
      }),
      { numRuns: 15 },
    );
    assertNoCanary(suite.all, 'profiles');
    await manager.close();
  }, 90_000);
});
