/**
 * Reliability suite, part 4 (continued): hostile command templates and the command backend.
 * Templates with hostile literals and values render each value inside its own word and run
 * without a shell; hostile names, argv, env, workdirs and cwds reach a toy scheduler's
 * commands and the job intact; malicious job ids and status lines from the scheduler are
 * refused before they are stored or passed on. No canary file may ever appear.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import {
  createCommandBackend,
  extractId,
  PLACEHOLDERS,
  parseStatus,
  renderCommand,
} from '@yonder/backend-command';
import {
  createLocalTransport,
  createRegistry,
  JobManager,
  type JsonObject,
  type YonderError,
} from '@yonder/core';
import {
  EXTERNAL_ID_PATTERN,
  parseExternalId,
  parseTemplate,
  runLocal,
} from '@yonder/core/backend-kit';
import { createFsStore } from '@yonder/store-fs';
import { hostileString, until } from '@yonder/test-helpers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scratch, summary } from './harness.js';
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
  splitNul,
} from './hostile.js';

const suite = hostileRun('command backend', 'command');

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
        fc.dictionary(fc.constantFrom(...PLACEHOLDERS), hostileString(suite.canary), {
          minKeys: PLACEHOLDERS.length,
        }),
        fc.array(hostileString(suite.canary, { lineBreaks: false }), { maxLength: 4 }),
        (words, values, ids) => {
          suite.count('templates');
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
        fc.dictionary(fc.constantFrom(...PLACEHOLDERS), hostileString(suite.canary), {
          minKeys: PLACEHOLDERS.length,
        }),
        async (words, values) => {
          suite.count('template-runs');
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
    assertNoCanary(suite.all, 'rendered templates');
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
      fc.asyncProperty(
        hostileJob(suite.canary, suite.token),
        hostileComponent(suite.token),
        async (input, workdirName) => {
          run += 1;
          suite.count('command-jobs');
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
          assertNoCanary(suite.all, `command run ${run}`);
        },
      ),
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
      status: `sh -c 'printf "%s\\n" "$@"' status '$(id) COMPLETED' '-rf FAILED' '4242;touch ${suite.canary} COMPLETED' '4242 RUNNING' {external_ids}`,
      cancel: `sh -c 'printf "%s\\0" "$@" > ${cancelArgs}' cancel {external_ids}`,
    };
    await manager.saveProfile({ name: 'toy', backend: 'command', workdir: out, options });
    const unsafe = [
      `1; touch ${suite.canary}`,
      '-rf',
      '$(id)',
      '`id`',
      `1|touch ${suite.canary}`,
      `1&&touch ${suite.canary}`,
      '../../etc/passwd',
      '1 2',
      "1'2",
      '-',
    ];
    for (const id of unsafe) {
      suite.count('malicious-ids');
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
      { argv: ['sleep', '2'], name: `4242\\n$(touch ${suite.canary})\\n-rf` },
      { profile: 'toy' },
    );
    expect(job.externalId).toBe('4242');
    await manager.refresh({ force: true });
    const polled = await manager.store.getJob(job.id);
    expect(polled).toMatchObject({ state: 'running', nativeState: 'RUNNING' });
    await manager.cancel([job.id]);
    expect(splitNul(readFileSync(cancelArgs, 'utf8'))).toEqual(['4242']);
    assertNoCanary(suite.all, 'malicious ids');
    // Property: whatever a submit command prints, what is kept is a safe id or nothing.
    fc.assert(
      fc.property(
        fc.array(hostileString(suite.canary), { maxLength: 4 }).map((lines) => lines.join('\n')),
        fc.option(fc.constantFrom('(?<id>\\S+)$', 'Submitted (\\S+)', '\\d+'), { nil: undefined }),
        (output, pattern) => {
          suite.count('id-outputs');
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
        fc.array(hostileString(suite.canary), { maxLength: 8 }).map((lines) => lines.join('\n')),
        fc.boolean(),
        (text, withIds) => {
          suite.count('status-outputs');
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
