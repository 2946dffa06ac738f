/** yonder in daily use, through the real CLI: status --json as an array, submit --batch, resubmit, profile defaults and their policy, profile validation, add --force and edit. */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  collectProcess,
  hostileWords,
  requireCliBuild,
  runCli,
  runCliJson,
  spawnCli,
  until,
} from '@yonder/test-helpers';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let state: string;
let work: string;
const yonder = (args: string[], extra: { env?: Record<string, string>; input?: string } = {}) =>
  runCli(args, { state, cwd: work, ...extra });
const json = (args: string[], env: Record<string, string> = {}) =>
  runCliJson(args, { state, cwd: work, env });

beforeAll(() => requireCliBuild());
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'yonder-daily-'));
  work = mkdtempSync(join(tmpdir(), 'yonder daily work '));
});
afterEach(() => {
  rmSync(state, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

/** The job's log once it has ended. */
async function output(id: string): Promise<string> {
  expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(0);
  return (await yonder(['logs', id, '--all'])).stdout;
}

describe('for scripts', () => {
  it('list --profile of a profile that does not exist says so', async () => {
    const none = await yonder(['list', '--profile', 'nope']);
    expect(none.code).toBe(0);
    expect(none.stderr).toContain('No profile named "nope"');
  }, 30_000);

  it('status --json is an array for one job as for two', async () => {
    const a = (await yonder(['submit', '--', 'true'])).stdout.trim();
    const b = (await yonder(['submit', '--', 'true'])).stdout.trim();
    const one = await json(['status', a]);
    expect(Array.isArray(one.doc.result)).toBe(true);
    expect(one.doc.result.map((job: { id: string }) => job.id)).toEqual([a]);
    const two = await json(['status', a, b]);
    expect(two.doc.result.map((job: { id: string }) => job.id)).toEqual([a, b]);
  }, 60_000);

  it('submit --batch: one job a line, one id a line in order, hostile words arrive literally', async () => {
    const canary = join(work, 'pwned');
    const words = hostileWords(canary);
    const lines = [
      JSON.stringify({ argv: ['printf', '%s\\n', ...words], name: 'hostile;$(x)' }),
      '',
      JSON.stringify({
        argv: ['cat', '{settings}'],
        settings: { a: "it's $(x)" },
        env: { X: 'y' },
      }),
      JSON.stringify({ argv: ['sh', '-c', 'echo "$X-$Y"'], env: { Y: 'z' } }),
    ];
    const file = join(work, 'jobs.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const batch = await yonder(['submit', '--batch', file, '--env', 'X=base']);
    expect(batch.code, batch.stderr).toBe(0);
    const ids = batch.stdout.trim().split('\n');
    expect(ids).toHaveLength(3);
    expect(await output(ids[0] as string)).toBe(words.map((word) => `${word}\n`).join(''));
    expect(JSON.parse(await output(ids[1] as string))).toEqual({ a: "it's $(x)" });
    expect(await output(ids[2] as string)).toBe('base-z\n');
    expect(existsSync(canary)).toBe(false);
    // From stdin, as JSON: one entry per line, saying which line it was.
    const piped = await yonder(['submit', '--batch', '-', '--json'], {
      input: `${JSON.stringify({ argv: ['true'] })}\n\n${JSON.stringify({ argv: ['true'], name: 'two' })}\n`,
    });
    expect(piped.code, piped.stderr).toBe(0);
    const doc = JSON.parse(piped.stdout);
    expect(doc.result.map((entry: { line: number }) => entry.line)).toEqual([1, 3]);
  }, 120_000);

  it('submit --batch: a bad line is named and nothing is submitted; a refused job is named by its line', async () => {
    const file = join(work, 'bad.jsonl');
    writeFileSync(
      file,
      [
        JSON.stringify({ argv: ['true'] }),
        '{"argv": ["true"',
        JSON.stringify({ argv: [], name: 'x' }),
        JSON.stringify({ argv: ['true'], colour: 'red' }),
      ].join('\n'),
    );
    const bad = await yonder(['submit', '--batch', file]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain('The batch was not submitted');
    expect(bad.stderr).toMatch(/line 2\b/);
    expect(bad.stderr).toContain('line 3: argv');
    expect(bad.stderr).toContain('line 4: unknown field "colour"');
    expect(bad.stderr).not.toMatch(/line 1\b/);
    // What the profile's backend cannot honour is named by line too, before anything is submitted.
    const unsupported = join(work, 'unsupported.jsonl');
    writeFileSync(unsupported, `{"argv": ["true"]}\n{"argv": ["true"], "cpus": 2}\n`);
    const refused = await yonder(['submit', '--batch', unsupported]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'line 2: resources.cpus: the local backend cannot honour cpus',
    );
    expect((await yonder(['list', '-q', '--all', '--no-refresh'])).stdout).toBe('');
    // The target refuses the second job (its working directory is not there): the first runs.
    const partial = join(work, 'partial.jsonl');
    writeFileSync(
      partial,
      `${JSON.stringify({ argv: ['true'] })}\n${JSON.stringify({ argv: ['true'], cwd: join(work, 'missing dir') })}\n`,
    );
    const result = await yonder(['submit', '--batch', partial]);
    expect(result.code).toBe(1);
    // Only the submitted job's id is printed; the other is named on stderr.
    const ids = result.stdout.trim().split('\n');
    expect(ids).toHaveLength(1);
    expect(result.stderr).toMatch(
      /line 2: job [0-9a-f]{12} was not submitted: The job's working directory /,
    );
    expect(result.stderr).not.toContain(ids[0] as string);
    expect((await yonder(['wait', ids[0] as string, '--timeout', '60'])).code).toBe(0);
  }, 120_000);

  it('resubmit runs the same spec again, settings and environment included', async () => {
    const settings = join(work, 'settings.json');
    writeFileSync(settings, JSON.stringify({ input: 'a b;$(c)' }));
    const first = (
      await yonder([
        'submit',
        '--name',
        'again',
        '--settings',
        settings,
        '--env',
        'K=v w',
        '--',
        'sh',
        '-c',
        'cat "$1"; echo "$K"',
        'sh',
        '{settings}',
      ])
    ).stdout.trim();
    const before = await output(first);
    const again = await yonder(['resubmit', first.slice(0, 6)]);
    expect(again.code, again.stderr).toBe(0);
    const second = again.stdout.trim();
    expect(second).not.toBe(first);
    expect(await output(second)).toBe(before);
    const [old, fresh] = (await json(['status', first, second, '--no-refresh'])).doc.result;
    expect(fresh.name).toBe('again');
    expect(fresh.spec.argv).toEqual(old.spec.argv);
    expect(fresh.spec.env).toEqual({ K: 'v w' });
    expect(fresh.spec.settingsSha256).toBe(old.spec.settingsSha256);
  }, 120_000);
});

describe('list --watch', () => {
  it('follows the listed jobs as NDJSON until every one has ended; Ctrl-C ends it with 130', async () => {
    // The job ends only once the watch has listed it: a job that merely slept (it was `sleep 2`)
    // could end before a busy machine had started the watch, which then listed it ended and
    // saw no change (the test failed so, twice).
    const gate = join(work, 'go');
    const id = (
      await yonder([
        'submit',
        '--name',
        'w;$(x)',
        '--',
        'sh',
        '-c',
        'while [ ! -e "$1" ]; do sleep 0.1; done',
        'sh',
        gate,
      ])
    ).stdout.trim();
    const watching = spawnCli(['list', '--watch', '--json'], { state, cwd: work });
    const finished = collectProcess(watching);
    let listed = '';
    watching.stdout?.on('data', (chunk) => {
      listed += chunk;
    });
    await until(() => listed.includes('"listed"'), 60_000, 'the watch to list the job');
    writeFileSync(gate, '');
    const watched = await finished;
    expect(watched.code, watched.stderr).toBe(0);
    const events = watched.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events[0]).toMatchObject({ type: 'listed', job: { id, name: 'w;$(x)' } });
    expect(events.at(-1)).toMatchObject({ type: 'state-changed', job: { id, state: 'succeeded' } });
    // Without a terminal: one line per change; nothing left to follow: it ends at once.
    expect((await yonder(['list', '--watch'])).stdout).toBe(`${id} succeeded\n`);
    const long = (await yonder(['submit', '--', 'sleep', '300'])).stdout.trim();
    const child = spawnCli(['list', '--watch'], { state, cwd: work });
    const ended = collectProcess(child);
    let seen = '';
    child.stdout?.on('data', (chunk) => {
      seen += chunk;
    });
    await until(() => seen.includes(long), 30_000, 'the watch to list the job');
    child.kill('SIGINT');
    const result = await ended;
    expect(result.code).toBe(130);
    expect(result.stdout).toContain(`${long} running`);
    await yonder(['cancel', long]);
  }, 90_000);
});

describe('profile defaults', () => {
  it('a profile carries resources and scheduler options; flags on submit override them field by field', async () => {
    const add = await yonder([
      'profile',
      'add',
      'hpc',
      '--backend',
      'slurm',
      '--set',
      'partition=debug',
      '--time',
      '10',
      '--cpus',
      '2',
      '--scheduler-option',
      '--exclusive',
      '--scheduler-option=--comment=a b',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const show = await json(['profile', 'show', 'hpc']);
    expect(show.doc.result.defaults).toEqual({
      resources: { partition: 'debug', time: '10', cpus: 2 },
      schedulerOptions: ['--exclusive', '--comment=a b'],
    });
    expect((await yonder(['profile', 'show', 'hpc'])).stdout).toContain(
      'Default:   partition = "debug"',
    );
    // The submit's own value wins: edit changes one field, keeps the others.
    const edit = await yonder(['profile', 'edit', 'hpc', '--partition', 'long']);
    expect(edit.code, edit.stderr).toBe(0);
    expect((await json(['profile', 'show', 'hpc'])).doc.result.defaults.resources).toEqual({
      partition: 'long',
      time: '10',
      cpus: 2,
    });
    // A local profile cannot have defaults it would refuse.
    const local = await yonder(['profile', 'add', 'here', '--backend', 'local', '--time', '5']);
    expect(local.code).toBe(1);
    expect(local.stderr).toContain('defaults.resources.time: the local backend cannot honour time');
    const invalid = await yonder([
      'profile',
      'add',
      'odd',
      '--backend',
      'slurm',
      '--memory',
      'lots',
    ]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('defaults.resources.memory');
  }, 60_000);

  it('unsupportedResources lets one submit command serve a local profile: refuse, warn, ignore', async () => {
    const flags = [
      '--cpus',
      '4',
      '--memory',
      '1G',
      '--time',
      '5',
      '--scheduler-option',
      '--exclusive',
    ];
    const refused = await yonder(['submit', ...flags, '--', 'true']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('cannot honour');
    for (const policy of ['warn', 'ignore']) {
      const add = await yonder([
        'profile',
        'add',
        `l-${policy}`,
        '--backend',
        'local',
        '--unsupported-resources',
        policy,
      ]);
      expect(add.code, add.stderr).toBe(0);
      const submit = await yonder([
        'submit',
        '--profile',
        `l-${policy}`,
        ...flags,
        '--',
        'echo',
        'ran',
      ]);
      expect(submit.code, submit.stderr).toBe(0);
      if (policy === 'warn')
        expect(submit.stderr).toContain(
          'cannot honour time, cpus, memory, schedulerOptions; left out',
        );
      else expect(submit.stderr).toBe('');
      expect(await output(submit.stdout.trim())).toBe('ran\n');
    }
    const bad = await yonder([
      'profile',
      'add',
      'x',
      '--backend',
      'local',
      '--unsupported-resources',
      'maybe',
    ]);
    expect(bad.code).toBe(2);
  }, 90_000);
});

describe('profiles checked', () => {
  it('a hand-edited profile is refused on read with its file, field and fix', async () => {
    expect((await yonder(['profile', 'add', 'mine', '--backend', 'local'])).code).toBe(0);
    const file = join(state, 'profiles', 'mine.json');
    const profile = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...profile, workdir: 'relative' }));
    const submit = await yonder(['submit', '--profile', 'mine', '--', 'true']);
    expect(submit.code).toBe(1);
    expect(submit.stderr).toContain(file);
    expect(submit.stderr).toContain('workdir must be an absolute path');
    expect(submit.stderr).toContain('Fix:');
    expect(existsSync(join(work, 'relative'))).toBe(false);
  }, 60_000);

  it('profile add of an existing name, the built-in local too, needs --force', async () => {
    const local = await yonder([
      'profile',
      'add',
      'local',
      '--backend',
      'local',
      '--poll-seconds',
      '3',
    ]);
    expect(local.code).toBe(1);
    expect(local.stderr).toContain('"local" exists (the built-in one). Add --force');
    expect((await yonder(['profile', 'add', 'LOCAL', '--backend', 'local', '--force'])).code).toBe(
      0,
    );
    expect((await yonder(['profile', 'add', 'p', '--backend', 'local'])).code).toBe(0);
    expect((await yonder(['profile', 'add', 'p', '--backend', 'local'])).code).toBe(1);
  }, 60_000);

  it('profile edit opens $EDITOR, saves a valid edit, keeps the old profile for an invalid one', async () => {
    expect((await yonder(['profile', 'add', 'ed', '--backend', 'local'])).code).toBe(0);
    const editor = (name: string, body: string): string => {
      const path = join(work, name);
      writeFileSync(path, `#!/bin/sh\n${body}\n`);
      chmodSync(path, 0o755);
      return path;
    };
    const good = editor(
      'good',
      `sed -i 's/"backend": "local"/"backend": "local", "pollSeconds": 7/' "$1"`,
    );
    const edited = await yonder(['profile', 'edit', 'ed'], { env: { EDITOR: good, VISUAL: '' } });
    expect(edited.code, edited.stderr).toBe(0);
    expect((await json(['profile', 'show', 'ed'])).doc.result.pollSeconds).toBe(7);
    const bad = editor(
      'bad',
      `sed -i 's/"pollSeconds": 7/"pollSeconds": 7, "workdir": "relative"/' "$1"`,
    );
    const refused = await yonder(['profile', 'edit', 'ed'], { env: { EDITOR: bad } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('was not saved (the old one is kept; your edit is in');
    expect(refused.stderr).toContain('workdir');
    expect((await json(['profile', 'show', 'ed'])).doc.result).toEqual({
      name: 'ed',
      backend: 'local',
      pollSeconds: 7,
    });
    const failing = await yonder(['profile', 'edit', 'ed'], {
      env: { EDITOR: editor('fails', 'exit 3') },
    });
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain('exited 3; the profile is unchanged');
  }, 60_000);
});
