/**
 * Reliability suite, part 4: hostile input (local machine). Property tests over every field
 * that reaches a shell, a scheduler directive, a template or a path: job names, argv,
 * settings, env values, working directories, profile fields, command templates, and the
 * scheduler output parsers, including malicious job ids. Real jobs run through the local
 * backend (in-process and through the CLI) and through the command backend; their argv, env
 * and settings must arrive byte for byte, and no canary file may ever appear.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  createCommandBackend,
  extractId,
  PLACEHOLDERS,
  parseStatus,
  renderCommand,
} from '@yonder/backend-command';
import {
  parseSacct,
  parseSbatchId,
  parseSqueue,
  reconcile,
  type SacctRow,
  type SqueueRow,
  sbatchOptions,
  slurmJobName,
} from '@yonder/backend-slurm';
import {
  type BackendJobV1,
  createLocalBackend,
  createLocalTransport,
  createMemoryStore,
  createRegistry,
  EXTERNAL_ID_PATTERN,
  HOST_PATTERN,
  JobManager,
  type JobSpec,
  type JsonObject,
  PROFILE_NAME_PATTERN,
  parseExternalId,
  parseTemplate,
  runLocal,
  validateProfileFields,
  validateResources,
  type YonderError,
} from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanupAll,
  readJob,
  requireBuild,
  scratch,
  summary,
  until,
  yonder,
  yonderJson,
} from './harness.js';
import {
  assertNoCanary,
  DUMP,
  dumpDone,
  ENV_NAMES,
  homeCanaries,
  hostileComponent,
  hostileString,
  joinOut,
  readDump,
  splitNul,
} from './hostile.js';

let canaryDir = '';
let CANARY = '';
const TOKEN = `yonder-canary-${process.pid}-input`;
let allCanaries: string[] = [];
const tried: Record<string, number> = {};

function count(what: string): void {
  tried[what] = (tried[what] ?? 0) + 1;
}

beforeAll(() => {
  requireBuild();
  canaryDir = scratch('canary');
  CANARY = join(canaryDir, 'CANARY');
  allCanaries = [CANARY, ...homeCanaries(TOKEN)];
});

afterAll(() => {
  summary(
    `hostile input (local): inputs tried ${Object.entries(tried)
      .map(([what, n]) => `${what} ${n}`)
      .join(', ')}; canaries created 0`,
  );
  cleanupAll();
});

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

/** What the job should see as argv once `{settings}` has been replaced (when there are settings). */
function expectedArgv(words: readonly string[], settingsPath: string | null): string[] {
  return words.map((word) =>
    settingsPath === null ? word : word.split('{settings}').join(settingsPath),
  );
}

const jobArbitrary = () =>
  fc.record({
    args: fc.array(hostileString(CANARY), { maxLength: 6 }),
    name: hostileString(CANARY, { lineBreaks: false }).filter(
      (name) => name.trim() !== '' && name.length <= 200,
    ),
    env: fc.dictionary(fc.constantFrom(...ENV_NAMES), hostileString(CANARY)),
    settings: fc.option(
      fc.dictionary(hostileString(CANARY, { maxParts: 3 }), hostileString(CANARY)),
      { nil: undefined },
    ),
    settingsWords: fc.boolean(),
    cwd: fc.option(hostileComponent(TOKEN), { nil: undefined }),
  });

describe('real jobs through the local backend', () => {
  it('argv, name, env, settings and cwd arrive byte for byte; nothing is interpreted (JobManager)', async () => {
    const state = scratch('hostile-local');
    const out = scratch('hostile-local-out');
    const cwdBase = scratch('hostile-local-cwd');
    const manager = localManager(state);
    let run = 0;
    await fc.assert(
      fc.asyncProperty(jobArbitrary(), async (input) => {
        run += 1;
        count('local-jobs');
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
        assertNoCanary(allCanaries, `local run ${run}`);
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
      hostileString(CANARY).map((value) => ({ name: `${value}\n${value}` })),
      hostileString(CANARY).map((value) => ({ name: `a\r${value}` })),
      hostileString(CANARY).map((value) => ({ cwd: `/tmp/${value}\n` })),
      hostileString(CANARY).map((value) => ({ cwd: `relative/${value}` })),
      hostileString(CANARY).map((value) => ({ argv: ['sh', `${value}\0`] })),
      hostileString(CANARY).map((value) => ({ env: { H0: `${value}\0x` } })),
      hostileString(CANARY).map((value) => ({ env: { [`1${value}`]: 'x' } })),
      hostileString(CANARY, { lineBreaks: false }).map((value) => ({
        secrets: { [`${value} $`]: 'x' },
      })),
      fc.constant({ argv: [] as string[] }),
      fc.constant({ argv: [''] as string[] }),
    );
    await fc.assert(
      fc.asyncProperty(refusal, async (bad) => {
        count('refusals');
        const spec: JobSpec = { argv: ['sh', '-c', `touch ${CANARY}`], ...bad };
        await expect(manager.submit(spec)).rejects.toMatchObject({ code: 'E_INVALID_JOB_SPEC' });
      }),
      { numRuns: 100 },
    );
    expect((await manager.list({ all: true, refresh: false })).jobs).toEqual([]);
    assertNoCanary(allCanaries, 'refused specs');
    await manager.close();
  }, 60_000);

  it('through the CLI (yonder submit --name= --env= --settings --cwd -- ARGV): byte for byte, no canary', async () => {
    const state = scratch('hostile-cli');
    const out = scratch('hostile-cli-out');
    const cwdBase = scratch('hostile-cli-cwd');
    const ids: string[] = [];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(jobArbitrary(), async (input) => {
        run += 1;
        count('cli-jobs');
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
        const result = await yonder(
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
        assertNoCanary(allCanaries, `CLI run ${run}`);
      }),
      { numRuns: 20 },
    );
    const listed = await yonderJson(['wait', '--timeout', '30', ...ids], { state, cwd: out });
    expect(listed.doc.result.jobs.map((job: any) => job.state)).toEqual(ids.map(() => 'succeeded'));
    // A program name that is itself hostile is run as a name, never parsed.
    for (const program of [`$(touch ${CANARY})`, `;touch ${CANARY}`, `-rf`, `a b`]) {
      count('cli-programs');
      const result = await yonder(['submit', '--', program], { state, cwd: out });
      expect(result.code, result.stderr).toBe(0);
      const waited = await yonderJson(['wait', '--timeout', '20', result.stdout.trim()], {
        state,
        cwd: out,
      });
      expect(waited.doc.result.jobs[0]).toMatchObject({ state: 'failed', exitCode: 127 });
    }
    assertNoCanary(allCanaries, 'hostile program names');
  }, 120_000);

  it('hostile profile fields: invalid ones are refused, valid odd workdirs are used literally', async () => {
    const state = scratch('hostile-profile');
    const manager = localManager(state);
    const base = scratch('hostile-profile-workdirs');
    await fc.assert(
      fc.asyncProperty(
        hostileString(CANARY),
        hostileString(CANARY),
        hostileComponent(TOKEN),
        async (host, name, component) => {
          count('profile-fields');
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
      fc.asyncProperty(hostileComponent(TOKEN), async (component) => {
        count('workdirs');
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
    assertNoCanary(allCanaries, 'profiles');
    await manager.close();
  }, 90_000);
});

describe('command templates and the command backend', () => {
  /** A template word: literal text and placeholders. */
  const part = fc.oneof(
    hostileString('/nonexistent/CANARY', { maxParts: 3 }).map((literal) => ({ literal })),
    fc.constantFrom(...PLACEHOLDERS.filter((name) => name !== 'external_ids')).map((name) => ({
      name,
    })),
  );
  const templateWords = fc.array(fc.array(part, { minLength: 1, maxLength: 3 }), {
    minLength: 1,
    maxLength: 5,
  });
  /** Write a parsed word back as template text: single-quoted literals, `{{`/`}}` for braces. */
  function templateText(words: Array<Array<{ literal: string } | { name: string }>>): string {
    return words
      .map((word) =>
        word
          .map((piece) =>
            'name' in piece
              ? `{${piece.name}}`
              : `'${piece.literal.replaceAll('{', '{{').replaceAll('}', '}}').replaceAll("'", `'\\''`)}'`,
          )
          .join(''),
      )
      .join(' ');
  }

  it('renderCommand puts each value inside its own word, whatever it holds (property)', () => {
    fc.assert(
      fc.property(
        templateWords,
        fc.dictionary(fc.constantFrom(...PLACEHOLDERS), hostileString(CANARY), {
          minKeys: PLACEHOLDERS.length,
        }),
        fc.array(hostileString(CANARY, { lineBreaks: false }), { maxLength: 4 }),
        (words, values, ids) => {
          count('templates');
          const filled = Object.fromEntries(PLACEHOLDERS.map((name) => [name, values[name] ?? '']));
          const parsed = parseTemplate(templateText(words), 'options.submit', PLACEHOLDERS, {
            requireProgram: false,
          });
          const rendered = renderCommand(parsed, filled, ids);
          const expected = words.map((word) =>
            word.map((piece) => ('name' in piece ? filled[piece.name] : piece.literal)).join(''),
          );
          expect(rendered).toEqual(expected);
          // {external_ids} alone is one word per id; inside a word, ids joined by commas.
          const alone = parseTemplate('x {external_ids}', 'options.status', PLACEHOLDERS);
          expect(renderCommand(alone, filled, ids)).toEqual(['x', ...ids]);
          const inside = parseTemplate('x --ids={external_ids}', 'options.status', PLACEHOLDERS);
          expect(renderCommand(inside, filled, ids)).toEqual(['x', `--ids=${ids.join(',')}`]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('rendered commands run without a shell: printf sees exactly the words (property, real processes)', async () => {
    await fc.assert(
      fc.asyncProperty(
        templateWords,
        fc.dictionary(fc.constantFrom(...PLACEHOLDERS), hostileString(CANARY), {
          minKeys: PLACEHOLDERS.length,
        }),
        async (words, values) => {
          count('template-runs');
          const filled = Object.fromEntries(PLACEHOLDERS.map((name) => [name, values[name] ?? '']));
          const parsed = parseTemplate(
            `printf '%s\\0' ${templateText(words)}`,
            'options.submit',
            PLACEHOLDERS,
          );
          const argv = renderCommand(parsed, filled, []);
          const result = await runLocal(argv);
          expect(splitNul(result.stdout)).toEqual(argv.slice(2));
        },
      ),
      { numRuns: 30 },
    );
    assertNoCanary(allCanaries, 'rendered templates');
  });

  it('the command backend: hostile names, argv, env, workdir and cwd reach the scheduler command and the job intact', async () => {
    const state = scratch('hostile-cmd');
    const out = scratch('hostile-cmd-out');
    const cwdBase = scratch('hostile-cmd-cwd');
    const manager = new JobManager({
      store: createFsStore({ location: state }),
      registry: createRegistry({
        backends: [createCommandBackend()],
        transports: { local: () => createLocalTransport() },
      }),
      stateDirectory: state,
      minPollIntervalMs: 0,
    });
    // A toy scheduler: records its arguments, starts the job script in the background.
    const record = join(out, 'submit');
    const options = {
      submit: `sh -c 'printf "%s\\0" "$@" > "$0.$3"; nohup sh "$4" > /dev/null 2>&1 & echo "job-$3"' ${record} {workdir} {name} {id} {script} {log} {settings} {profile}`,
      status: `sh -c 'exit 0' status {external_ids}`,
      cancel: `sh -c 'exit 0' cancel {external_ids}`,
    };
    let run = 0;
    await fc.assert(
      fc.asyncProperty(jobArbitrary(), hostileComponent(TOKEN), async (input, workdirName) => {
        run += 1;
        count('command-jobs');
        const workdir = join(scratch('hostile-cmd-wd'), workdirName);
        const profile = `cmd ${run}`;
        await manager.saveProfile({ name: profile, backend: 'command', workdir, options });
        const dump = joinOut(out, run);
        const cwd = input.cwd === undefined ? undefined : join(cwdBase, `${run}-${input.cwd}`);
        if (cwd) mkdirSync(cwd);
        const words = [...input.args, ...(input.settingsWords ? ['{settings}'] : [])];
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
        const jobDir = `${workdir}/${job.id}`;
        expect(job.externalId).toBe(`job-${job.id}`);
        expect(splitNul(readFileSync(`${record}.${job.id}`, 'utf8'))).toEqual([
          jobDir,
          input.name,
          job.id,
          `${jobDir}/job.sh`,
          `${jobDir}/job.log`,
          `${jobDir}/settings.json`,
          profile,
        ]);
        await until(() => dumpDone(dump), 10_000, `command run ${run} to finish`);
        const seen = readDump(dump);
        const settingsPath = input.settings === undefined ? null : `${jobDir}/settings.json`;
        expect(seen.argv).toEqual(expectedArgv(words, settingsPath));
        for (const [name, value] of Object.entries(input.env)) expect(seen.env[name]).toBe(value);
        expect(seen.env.YONDER_JOB_NAME).toBe(input.name);
        expect(seen.cwd).toBe(realpathSync(cwd ?? jobDir));
        if (settingsPath)
          expect(JSON.parse(readFileSync(settingsPath, 'utf8'))).toEqual(input.settings);
        assertNoCanary(allCanaries, `command run ${run}`);
      }),
      { numRuns: 20 },
    );
    const ids = (await manager.list({ all: true, refresh: false })).jobs.map((job) => job.id);
    const { jobs } = await manager.wait(ids, { timeoutMs: 30_000 });
    expect(jobs.filter((job) => job.state !== 'succeeded')).toEqual([]);
    await manager.close();
  }, 120_000);

  // Regression (found by this suite; fixed in 7d65569 and 366dc51): in a JS regular expression
  // `.` stops at U+2028/U+2029, which a profile workdir may hold. With workdir "/…/a\u2028b" the
  // command backend cut the submit's DIR line and failed with E_UNSAFE_VALUE "unsafe or empty
  // job id: \"b/<id>\"" although the scheduler had started the job; then (after the first fix)
  // the EXIT_CODES_SCRIPT readers `/^(.*)\t(\d+)$/` never matched the job directory, so the exit
  // code was never read and the job could only end lost.
  it('a workdir containing U+2028 is refused, or its jobs are recorded and observed', async () => {
    const state = scratch('u2028-state');
    const out = scratch('u2028-out');
    const manager = new JobManager({
      store: createFsStore({ location: state }),
      registry: createRegistry({
        backends: [createCommandBackend()],
        transports: { local: () => createLocalTransport() },
      }),
      stateDirectory: state,
      minPollIntervalMs: 0,
    });
    const workdir = join(out, 'a\u2028b');
    const options = {
      submit: `sh -c 'nohup sh "$1" > /dev/null 2>&1 & echo "job-$2"' submit {script} {id}`,
      status: `sh -c 'exit 0' status {external_ids}`,
      cancel: `sh -c 'exit 0' cancel {external_ids}`,
    };
    try {
      const issues = await manager.validateProfile({
        name: 'u',
        backend: 'command',
        workdir,
        options,
      });
      if (issues.length > 0) return; // refused up front: what the fix may choose
      await manager.saveProfile({ name: 'u', backend: 'command', workdir, options });
      const outcome = await manager.submit({ argv: ['true'] }, { profile: 'u' }).then(
        (job) => job,
        (error: YonderError) => error,
      );
      const ran = readdirSync(workdir).length;
      if (outcome instanceof Error)
        summary(
          `U+2028 in a command workdir: submit failed: ${outcome.message}; job directories on disk: ${ran}`,
        );
      expect(outcome).not.toBeInstanceOf(Error);
      const job = outcome as Awaited<ReturnType<JobManager['submit']>>;
      expect(job.externalId).toBe(`job-${job.id}`);
      const { jobs } = await manager.wait([job.id], { timeoutMs: 8_000 });
      summary(
        `U+2028 in a command workdir: after 8 s the job is ${jobs[0]?.state}; its exit-code file ${existsSync(join(String(job.data.jobDir), 'exit-code')) ? 'exists' : 'is missing'}`,
      );
      expect(jobs[0]?.state).toBe('succeeded');
    } finally {
      await manager.close();
    }
  }, 60_000);

  it('malicious job ids from a scheduler are refused before they are stored or passed on', async () => {
    const state = scratch('hostile-ids');
    const out = scratch('hostile-ids-out');
    const manager = new JobManager({
      store: createFsStore({ location: state }),
      registry: createRegistry({
        backends: [createCommandBackend()],
        transports: { local: () => createLocalTransport() },
      }),
      stateDirectory: state,
      minPollIntervalMs: 0,
    });
    const cancelArgs = join(out, 'cancel.args');
    // The toy scheduler prints the job's name as its id (printf %b turns \n into a newline), lists
    // hostile status lines, and records what cancel was given.
    const options = {
      submit: `sh -c 'printf "%b" "$1"; test -n "$2"' submit {name} {script}`,
      status: `sh -c 'printf "%s\\n" "$@"' status '$(id) COMPLETED' '-rf FAILED' '4242;touch ${CANARY} COMPLETED' '4242 RUNNING' {external_ids}`,
      cancel: `sh -c 'printf "%s\\0" "$@" > ${cancelArgs}' cancel {external_ids}`,
    };
    await manager.saveProfile({ name: 'toy', backend: 'command', workdir: out, options });
    const unsafe = [
      `1; touch ${CANARY}`,
      '-rf',
      '$(id)',
      '`id`',
      `1|touch ${CANARY}`,
      `1&&touch ${CANARY}`,
      '../../etc/passwd',
      '1 2',
      "1'2",
      '-',
    ];
    for (const id of unsafe) {
      count('malicious-ids');
      const error = await manager.submit({ argv: ['true'], name: id }, { profile: 'toy' }).then(
        () => null,
        (thrown: unknown) => thrown as YonderError,
      );
      expect(error?.code, id).toBe('E_UNSAFE_VALUE');
    }
    // Never stored: every refused submit is failed with no external id.
    const refused = (await manager.list({ all: true, refresh: false })).jobs;
    expect(refused).toHaveLength(unsafe.length);
    for (const job of refused) expect(job).toMatchObject({ state: 'failed', externalId: null });
    // A newline-injected answer: the first line is the id, the rest is never used.
    const job = await manager.submit(
      { argv: ['sleep', '2'], name: `4242\\n$(touch ${CANARY})\\n-rf` },
      { profile: 'toy' },
    );
    expect(job.externalId).toBe('4242');
    await manager.refresh({ force: true });
    const polled = await manager.store.getJob(job.id);
    expect(polled).toMatchObject({ state: 'running', nativeState: 'RUNNING' });
    await manager.cancel([job.id]);
    expect(splitNul(readFileSync(cancelArgs, 'utf8'))).toEqual(['4242']);
    assertNoCanary(allCanaries, 'malicious ids');
    // Property: whatever a submit command prints, what is kept is a safe id or nothing.
    fc.assert(
      fc.property(
        fc.array(hostileString(CANARY), { maxLength: 4 }).map((lines) => lines.join('\n')),
        fc.option(fc.constantFrom('(?<id>\\S+)$', 'Submitted (\\S+)', '\\d+'), { nil: undefined }),
        (output, pattern) => {
          count('id-outputs');
          const raw = extractId(output, pattern);
          let kept: string | null = null;
          try {
            kept = parseExternalId(raw).id;
          } catch (thrown) {
            expect((thrown as YonderError).code).toBe('E_UNSAFE_VALUE');
          }
          if (kept !== null) {
            expect(kept).toMatch(EXTERNAL_ID_PATTERN);
            expect(kept.startsWith('-')).toBe(false);
          }
        },
      ),
      { numRuns: 500 },
    );
    await manager.close();
  }, 60_000);

  it('parseStatus never attributes a line to another id and never throws (property)', () => {
    fc.assert(
      fc.property(
        fc.array(hostileString(CANARY), { maxLength: 8 }).map((lines) => lines.join('\n')),
        fc.boolean(),
        (text, withIds) => {
          count('status-outputs');
          const lines = parseStatus(text, withIds, '4242');
          for (const line of lines) {
            expect(line.state).not.toMatch(/\s/);
            expect(line.state).not.toBe('');
            if (line.id !== null) expect(line.id).not.toMatch(/\s/);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('Slurm output parsers (properties)', () => {
  const field = hostileString(CANARY, { lineBreaks: false, maxParts: 4 }).map((value) =>
    value.replaceAll('|', '¦'),
  );
  const jobId = fc.integer({ min: 1, max: 2 ** 31 }).map(String);
  const malicious = fc.constantFrom(
    '1; touch /tmp/x',
    '-rf',
    '$(id)',
    '`id`',
    '1 2',
    '',
    '12a',
    '0x10',
    ' 7',
    '1\u00a0',
  );

  it('parseSqueue reads back every field of well-formed rows; skips malformed and malicious ids', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({
            jobId,
            displayId: field,
            state: field,
            name: field,
            comment: hostileString(CANARY, { lineBreaks: false, maxParts: 4 }),
            reason: field,
          }),
          { maxLength: 6, selector: (row) => row.jobId },
        ),
        fc.array(fc.tuple(malicious, field), { maxLength: 3 }),
        (rows, evil) => {
          count('squeue-outputs');
          const text = [
            ...rows.map((r) =>
              [r.jobId, r.displayId, r.state, r.name, r.comment, r.reason].join('|'),
            ),
            ...evil.map(([id, rest]) => `${id}|${id}|RUNNING|${rest}|c|None`),
          ].join('\n');
          const parsed = parseSqueue(text);
          for (const row of parsed) expect(row.jobId).toMatch(/^\d+$/);
          // A malicious id never becomes a row.
          for (const [id] of evil)
            if (!/^\d+$/.test(id)) expect(parsed.map((r) => r.jobId)).not.toContain(id);
          // Every well-formed row comes back with its fields.
          for (const r of rows) {
            const row = parsed.find((p) => p.jobId === r.jobId && p.name === r.name);
            expect(row, JSON.stringify(r)).toBeDefined();
            expect(row?.state).toBe(r.state);
            expect(row?.reason).toBe(r.reason);
            expect(row?.comment).toBe(r.comment === '(null)' ? '' : r.comment);
          }
        },
      ),
      { numRuns: 300 },
    );
    // Arbitrary text never throws.
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        count('squeue-outputs');
        for (const row of parseSqueue(text)) expect(row.jobId).toMatch(/^\d+$/);
        for (const row of parseSacct(text)) expect(row.jobId).toMatch(/^\d+$/);
      }),
      { numRuns: 300 },
    );
  });

  it('parseSacct keeps the comment (which may hold "|") whole; malicious ids never become rows', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({
            jobId,
            displayId: field,
            name: field,
            state: field,
            exitCode: field,
            comment: hostileString(CANARY, { lineBreaks: false, maxParts: 4 }),
          }),
          { maxLength: 6, selector: (row) => row.jobId },
        ),
        malicious,
        (rows, evil) => {
          count('sacct-outputs');
          const text = [
            `${evil}|${evil}|x|COMPLETED|0:0|c`,
            ...rows.map((r) =>
              [r.jobId, r.displayId, r.name, r.state, r.exitCode, r.comment].join('|'),
            ),
          ].join('\n');
          const parsed = parseSacct(text);
          if (!/^\d+$/.test(evil)) expect(parsed.map((r) => r.jobId)).not.toContain(evil);
          for (const r of rows) {
            const row = parsed.find(
              (p) => p.jobId === r.jobId && p.name === r.name && p.comment === r.comment,
            );
            expect(row, JSON.stringify(r)).toBeDefined();
            expect(row?.exitCode).toBe(r.exitCode);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('parseSbatchId accepts only a numeric id line; injected lines never become the id', () => {
    for (const text of [
      '1; touch /tmp/x',
      '-rf',
      '$(id)',
      '`id`',
      '12 34',
      'Submitted batch job 5',
      '',
    ]) {
      count('sbatch-outputs');
      expect(parseSbatchId(text)).toBeNull();
    }
    expect(parseSbatchId('123\n$(id)')).toEqual({ id: '123', cluster: null });
    expect(parseSbatchId('sbatch: warning: x\n77;cluster\n')).toEqual({
      id: '77',
      cluster: 'cluster',
    });
    fc.assert(
      fc.property(fc.array(hostileString(CANARY), { maxLength: 5 }), (lines) => {
        count('sbatch-outputs');
        const answer = parseSbatchId(lines.join('\n'));
        if (answer) {
          expect(answer.id).toMatch(/^\d+$/);
          if (answer.cluster !== null) expect(answer.cluster).not.toMatch(/\s/);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reconcile never takes a row whose name is not the job’s for the job (property)', () => {
    const job = (id: string, name: string): BackendJobV1 => ({
      id: 'aaaaaaaaaaaa',
      name: 'x',
      externalId: id,
      state: 'running',
      createdAt: new Date().toISOString(),
      cancelRequested: false,
      profile: { name: 'hpc', backend: 'slurm' },
      data: { jobName: name, jobDir: '/tmp/x', log: '/tmp/x/job.log', marker: 'm', cluster: null },
    });
    const states = fc.constantFrom(
      'RUNNING',
      'PENDING',
      'COMPLETED',
      'FAILED',
      'CANCELLED',
      'TIMEOUT',
      'BOGUS',
    );
    fc.assert(
      fc.property(
        jobId,
        field,
        fc.option(fc.tuple(field, states), { nil: undefined }),
        fc.option(fc.tuple(field, states, fc.constantFrom('0:0', '1:0', '0:9', '$(id)')), {
          nil: null,
        }),
        (id, ourName, queued, accounted) => {
          count('reconciles');
          const queue = new Map<string, SqueueRow>();
          if (queued)
            queue.set(id, {
              jobId: id,
              displayId: id,
              state: queued[1],
              name: queued[0],
              comment: '',
              reason: 'None',
            });
          const accounting = new Map<string, SacctRow>();
          if (accounted)
            accounting.set(id, {
              jobId: id,
              displayId: id,
              name: accounted[0],
              state: accounted[1],
              exitCode: accounted[2],
              comment: '',
            });
          const observation = reconcile(job(id, ourName), {
            queued: queue.get(id),
            accounting:
              accounted === null
                ? { error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'sacct failed' } }
                : { rows: accounting },
            files: { run: 0, started: false, exitCode: null },
          });
          if (observation.kind === 'found') {
            const fromQueue = queued && queued[0] === ourName;
            const fromAccounting = accounted && accounted[0] === ourName;
            expect(fromQueue || fromAccounting).toBe(true);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('Slurm job names and sbatch options stay single, safe words', () => {
    fc.assert(
      fc.property(hostileString(CANARY), (name) => {
        count('slurm-names');
        expect(slurmJobName('0123456789ab', name)).toMatch(
          /^yonder-0123456789ab(-[A-Za-z0-9_.-]{1,40})?$/,
        );
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(
        fc.record(
          {
            time: hostileString(CANARY, { maxParts: 2 }),
            memory: hostileString(CANARY, { maxParts: 2 }),
            partition: hostileString(CANARY, { maxParts: 2 }),
            account: hostileString(CANARY, { maxParts: 2 }),
            qos: hostileString(CANARY, { maxParts: 2 }),
          },
          { requiredKeys: [] },
        ),
        (resources) => {
          count('slurm-resources');
          if (validateResources(resources).length > 0) return;
          const options = sbatchOptions(
            {
              id: '0123456789ab',
              name: 'n',
              marker: 'yonder:0123456789ab',
              createdAt: '2026-01-01T00:00:00Z',
              argv: ['true'],
              env: {},
              secrets: {},
              resources,
              schedulerOptions: [],
              profile: { name: 'hpc', backend: 'slurm' },
            },
            'yonder-0123456789ab',
          );
          for (const option of options) {
            expect(option).toMatch(/^--[a-z-]+(=|$)/);
            expect(option).not.toMatch(/[\s'"`$;|&<>\\]/);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
