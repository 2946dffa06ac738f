/**
 * Reliability suite, part 4 over SSH: real jobs on the sshd test host `target` (profile host
 * `target`, the test ssh config) with hostile argv, names, env, settings, working directories
 * and profile workdirs. Every value crosses the ssh exec command line and a remote sh; it must
 * arrive byte for byte and nothing may be interpreted.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSshBackend, createSshTransport } from '@yonder/backend-ssh';
import { createRegistry, JobManager, type JsonObject, type Profile } from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { hostileString, requireCliBuild, requireSshHosts, until } from '@yonder/test-helpers';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cleanupAll, scratch, sharedDir, summary } from './harness.js';
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

const SSH_CONFIG = '/var/tmp/yonder-ssh/client/config';
const TOKEN = `yonder-canary-${process.pid}-ssh`;
let CANARY = '';
let canaries: string[] = [];
let manager: JobManager;
let shared = '';
let runs = 0;

beforeAll(() => {
  requireCliBuild();
  requireSshHosts();
  shared = sharedDir('ssh-hostile');
  CANARY = join(shared, 'CANARY');
  canaries = [CANARY, ...homeCanaries(TOKEN)];
  const state = scratch('ssh-hostile-state');
  manager = new JobManager({
    store: createFsStore({ location: state }),
    registry: createRegistry({
      backends: [createSshBackend()],
      transports: {
        ssh: (profile: Profile) =>
          createSshTransport({ profile, env: { ...process.env, SSH_AUTH_SOCK: '' } }),
      },
    }),
    stateDirectory: state,
    minPollIntervalMs: 0,
  });
});

afterAll(async () => {
  await manager?.close();
  cleanupAll();
});

function sshProfile(name: string, workdir?: string): Profile {
  return {
    name,
    backend: 'ssh',
    host: 'target',
    ...(workdir === undefined ? {} : { workdir }),
    ssh: { config: SSH_CONFIG },
  };
}

it('argv, name, env, settings, cwd and workdir reach the remote job byte for byte; nothing is interpreted', async () => {
  const out = join(shared, 'out');
  const cwdBase = join(shared, 'cwd');
  const workdirBase = join(shared, 'workdirs');
  for (const dir of [out, cwdBase]) worldWritable(dir);
  remoteOwned(workdirBase);
  const ids: string[] = [];
  const workdirName = hostileComponent(TOKEN);
  await fc.assert(
    fc.asyncProperty(
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
        cwd: fc.option(hostileComponent(TOKEN), { nil: undefined }),
        workdir: fc.option(workdirName, { nil: undefined }),
      }),
      async (input) => {
        runs += 1;
        const profile = `box ${runs}`;
        await manager.saveProfile(
          sshProfile(
            profile,
            input.workdir === undefined ? undefined : join(workdirBase, `${runs}-${input.workdir}`),
          ),
        );
        const dump = joinOut(out, runs);
        const cwd = input.cwd === undefined ? undefined : join(cwdBase, `${runs}-${input.cwd}`);
        if (cwd) mkdirSync(cwd, { mode: 0o777 });
        const words = [...input.args, ...(input.settings === undefined ? [] : ['{settings}'])];
        const job = await manager.submit(
          {
            argv: ['sh', '-c', DUMP, 'dump', dump, ...words],
            name: input.name,
            env: input.env,
            ...(input.settings === undefined ? {} : { settings: input.settings as JsonObject }),
            ...(cwd === undefined ? {} : { cwd }),
          },
          { profile },
        );
        ids.push(job.id);
        const jobDir = String(job.data.jobDir);
        if (input.workdir !== undefined)
          expect(jobDir).toBe(join(workdirBase, `${runs}-${input.workdir}`, job.id));
        await until(() => dumpDone(dump), 15_000, `ssh run ${runs} to finish`);
        const seen = readDump(dump);
        const settingsPath = `${jobDir}/settings.json`;
        expect(seen.argv).toEqual(
          input.settings === undefined
            ? words
            : words.map((w) => w.split('{settings}').join(settingsPath)),
        );
        for (const [name, value] of Object.entries(input.env)) expect(seen.env[name]).toBe(value);
        expect(seen.env.YONDER_JOB_NAME).toBe(input.name);
        expect(seen.env.YONDER_JOB_ID).toBe(job.id);
        expect(seen.cwd).toBe(cwd ?? jobDir);
        if (input.settings !== undefined)
          expect(JSON.parse(readFileSync(settingsPath, 'utf8'))).toEqual(input.settings);
        assertNoCanary(canaries, `ssh run ${runs}`);
      },
    ),
    { numRuns: 25 },
  );
  const { jobs } = await manager.wait(ids, { timeoutMs: 30_000 });
  expect(jobs.filter((job) => job.state !== 'succeeded').map((job) => job.id)).toEqual([]);
  summary(
    `hostile input over ssh: ${runs} real jobs on host target (argv, name, env, settings, cwd, workdir) arrived byte for byte, all succeeded; canaries created 0`,
  );
}, 180_000);

/** Make a directory the remote user (yonder-test) may write in. */
function worldWritable(dir: string): void {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
}

/**
 * Make a private directory of the remote user's own (yonder-test): a work directory must sit
 * below directories nobody else can change (issue 11), so a world-writable one will not do.
 */
function remoteOwned(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  execFileSync('chown', ['yonder-test:yonder-test', dir]);
}

// Regression (found by this suite, fixed in 7d65569): the submit's DIR line was read with
// /^DIR (.*)$/m, and in a JS regular expression `.` stops at U+2028, which a profile workdir may
// hold: the recorded jobDir was cut at the U+2028, so every poll looked for the exit-code file in
// the wrong directory and the job, which ran and succeeded, was declared lost.
it('a workdir containing U+2028: the job is observed where it ran (or the profile is refused)', async () => {
  const base = join(shared, 'u2028');
  remoteOwned(base);
  const workdir = join(base, 'a\u2028b');
  const profile = sshProfile('u2028', workdir);
  const issues = await manager.validateProfile(profile);
  if (issues.length > 0) return;
  await manager.saveProfile(profile);
  const job = await manager.submit({ argv: ['true'] }, { profile: 'u2028' });
  summary(
    `U+2028 in an ssh workdir: recorded jobDir ${JSON.stringify(job.data.jobDir).replaceAll('\u2028', '\\u2028')}`,
  );
  expect(job.data.jobDir).toBe(join(workdir, job.id));
  const { jobs } = await manager.wait([job.id], { timeoutMs: 20_000 });
  expect(jobs[0]?.state).toBe('succeeded');
}, 60_000);
