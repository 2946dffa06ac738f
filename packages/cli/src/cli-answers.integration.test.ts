/** What the CLI answers, through the real CLI (issue 24 item 16): poll warnings name the profile, --json errors list their issues, --format takes every field of the record, --state ignores case, cancel says what it did of each job, profile edit has its own help, an unknown option lists the known ones. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  collectProcess,
  requireCliBuild,
  runCli,
  runCliJson,
  spawnCli,
  until,
} from '@yonder/test-helpers';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let state: string;
let work: string;
const yonder = (args: string[]) => runCli(args, { state, cwd: work });
const json = (args: string[]) => runCliJson(args, { state, cwd: work });
const TOYQ = new URL('../../backend-command/examples/toyq', import.meta.url).pathname;

beforeAll(() => requireCliBuild());
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'yonder-answers-'));
  work = mkdtempSync(join(tmpdir(), 'yonder answers work '));
});
afterEach(() => {
  rmSync(state, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe('what the CLI says', () => {
  it('a target that cannot be polled is named by its profile in list, status and wait', async () => {
    // The command backend splits its templates into words: a path without spaces.
    const broken = join(state, 'broken-status');
    writeFileSync(broken, '#!/bin/sh\necho "status: the queue is down" >&2\nexit 1\n');
    chmodSync(broken, 0o755);
    const add = await yonder([
      'profile',
      'add',
      'My-Queue',
      '--backend',
      'command',
      '--workdir',
      join(work, 'jobs'),
      '--set',
      `submit=${TOYQ}/toyq-submit {script}`,
      '--set',
      'idPattern=Job (?<id>\\d+) queued',
      '--set',
      `status=${broken} {external_ids}`,
      '--set',
      `cancel=${TOYQ}/toyq-cancel {external_ids}`,
    ]);
    expect(add.code, add.stderr).toBe(0);
    const submitted = await yonder(['submit', '--profile', 'my-queue', '--', 'sleep', '300']);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    for (const args of [['list'], ['status', id], ['wait', id, '--give-up-after', '1s']]) {
      const result = await yonder(args);
      const warning = result.stderr.split('\n').find((line) => line.includes('cannot poll'));
      expect(warning, result.stderr).toMatch(
        /^yonder: warning: cannot poll profile "My-Queue" \(1 job\) at command:/,
      );
      expect(warning).toContain('the queue is down');
    }
    await yonder(['rm', '--force', id]);
  }, 120_000);

  it('a --json error carries its field issues as a list', async () => {
    const bad = await json(['profile', 'add', 'x', '--backend', 'local', '--set', 'colour=red']);
    expect(bad.code).toBe(1);
    expect(bad.doc.ok).toBe(false);
    expect(bad.doc.error.code).toBe('E_INVALID_PROFILE');
    expect(bad.doc.error.issues).toEqual([
      { path: 'options.colour', message: expect.stringMatching(/^unknown field/) },
    ]);
  }, 60_000);

  it('an unknown option key lists the known ones', async () => {
    const bad = await yonder([
      'profile',
      'add',
      'x',
      '--backend',
      'command',
      '--set',
      'colour=red',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/options\.colour: unknown field \(known fields: .*submit.*status/);
  }, 60_000);

  it('--format takes every field of the JSON record; --state ignores case as --profile does', async () => {
    const id = (await yonder(['submit', '--', 'true'])).stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(0);
    const record = (await json(['status', id])).doc.result[0] as Record<string, unknown>;
    const template = Object.keys(record)
      .map((field) => `{${field}}`)
      .join('|');
    const formatted = await yonder(['status', id, '--format', template]);
    expect(formatted.code, formatted.stderr).toBe(0);
    const submittedAt = await yonder(['list', '--format', '{submittedAt}']);
    expect(submittedAt.stdout.trim()).toBe(record.submittedAt);
    for (const state of ['SUCCEEDED', 'Succeeded', 'succeeded']) {
      const listed = await yonder(['list', '--state', state, '-q']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toBe(`${id}\n`);
    }
  }, 60_000);

  it('cancel of a finished job says so; cancel GOOD BAD cancels GOOD and reports BAD', async () => {
    const done = (await yonder(['submit', '--', 'true'])).stdout.trim();
    expect((await yonder(['wait', done, '--timeout', '60'])).code).toBe(0);
    const finished = await yonder(['cancel', done]);
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stdout).toBe(`${done} succeeded (had already ended: nothing to cancel)\n`);
    const good = (await yonder(['submit', '--', 'sleep', '300'])).stdout.trim();
    const both = await yonder(['cancel', good, 'nosuchjob']);
    expect(both.code).toBe(1);
    expect(both.stdout).toBe(`${good} cancelled\n`);
    expect(both.stderr).toContain('nosuchjob');
    const after = await json(['status', good, '--no-refresh']);
    expect(after.doc.result[0].state).toBe('cancelled');
  }, 90_000);

  it('profile edit --help prints its own help', async () => {
    for (const args of [
      ['profile', 'edit', '--help'],
      ['profile', 'edit', 'local', '--help'],
    ]) {
      const help = await yonder(args);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: yonder profile edit NAME/);
      expect(help.stdout).not.toContain('yonder profile add NAME --backend B');
    }
  }, 60_000);
});

describe('profile add at the same time', () => {
  it('two `profile add NAME` at once: one saves, the other is refused, none is lost (8 rounds)', async () => {
    for (let round = 0; round < 8; round += 1) {
      const name = `race-${round}`;
      const [first, second] = await Promise.all(
        [join(work, 'a'), join(work, 'b')].map((workdir) =>
          yonder(['profile', 'add', name, '--backend', 'local', '--workdir', workdir]),
        ),
      );
      const outcomes = [first, second].map((result) => result?.code).sort();
      expect(outcomes, `${first?.stderr}${second?.stderr}`).toEqual([0, 1]);
      const refused = [first, second].find((result) => result?.code === 1);
      expect(refused?.stderr).toContain(`A profile named "${name}" exists.`);
      expect(refused?.stderr).toContain('Add --force');
      // The saved one is the one that said so.
      const saved = [first, second].findIndex((result) => result?.code === 0);
      const shown = await json(['profile', 'show', name]);
      expect(shown.doc.result.workdir).toBe(join(work, saved === 0 ? 'a' : 'b'));
    }
  }, 240_000);
});

describe('logs without a range', () => {
  it("prints all of an ended job's log; of a running job the last 10 lines, saying so and how to get the rest", async () => {
    const lines = Array.from({ length: 25 }, (_, index) => `line ${index + 1}`);
    const script = 'for i in $(seq 1 25); do echo "line $i"; done';
    const done = (await yonder(['submit', '--', 'sh', '-c', script])).stdout.trim();
    expect((await yonder(['wait', done, '--timeout', '60'])).code).toBe(0);
    const all = await yonder(['logs', done]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(`${lines.join('\n')}\n`);
    expect(all.stderr).toBe('');
    const gate = join(work, 'go');
    const running = (
      await yonder([
        'submit',
        '--',
        'sh',
        '-c',
        `${script}; while [ ! -e "$1" ]; do sleep 0.2; done`,
        'sh',
        gate,
      ])
    ).stdout.trim();
    let tail = await yonder(['logs', running]);
    for (let tries = 0; tail.stdout !== `${lines.slice(15).join('\n')}\n` && tries < 100; tries++)
      tail = await yonder(['logs', running]);
    expect(tail.stdout).toBe(`${lines.slice(15).join('\n')}\n`);
    expect(tail.stderr).toContain(`the last 10 lines of the log of job ${running}, still running`);
    expect(tail.stderr).toContain(`yonder logs ${running} --all`);
    writeFileSync(gate, '');
    expect((await yonder(['wait', running, '--timeout', '60'])).code).toBe(0);
  }, 120_000);
});

describe('submit --batch interrupted', () => {
  it('Ctrl-C prints the ids submitted so far, exits 130, and leaves no half-made record', async () => {
    const file = join(work, 'jobs.jsonl');
    const count = 300;
    writeFileSync(
      file,
      Array.from({ length: count }, (_, index) =>
        JSON.stringify({ argv: ['true'], name: `n${index}` }),
      ).join('\n'),
    );
    const child = spawnCli(['submit', '--batch', file], { state, cwd: work });
    const ended = collectProcess(child);
    await until(
      async () =>
        (await yonder(['list', '--all', '--no-refresh', '-q'])).stdout.trim().split('\n').length >=
        3,
      120_000,
      'the batch to have started',
      100,
    );
    child.kill('SIGINT');
    const result = await ended;
    expect(result.code, result.stderr).toBe(130);
    const printed = result.stdout.trim().split('\n').filter(Boolean);
    expect(printed.length).toBeGreaterThan(0);
    expect(printed.length).toBeLessThan(count);
    expect(result.stderr).toContain(
      `yonder: interrupted: ${printed.length} of ${count} jobs were submitted (their ids are above); the other ${count - printed.length}, from line ${printed.length + 1} on, were not sent and left no record.`,
    );
    // The ledger holds exactly the jobs printed, each really submitted: none half-made.
    const listed = await json(['list', '--all']);
    const jobs = listed.doc.result as Array<{ id: string; name: string; state: string }>;
    expect(jobs.map((job) => job.id).sort()).toEqual([...printed].sort());
    for (const job of jobs) expect(['running', 'succeeded']).toContain(job.state);
    expect(jobs.map((job) => job.name).sort()).toEqual(
      printed.map((_, index) => `n${index}`).sort(),
    );
  }, 240_000);
});

describe('a stopped job', () => {
  it('a job stopped by itself (kill -STOP) shows running (stopped) in list and status, and runs on once continued', async () => {
    const id = (
      await yonder(['submit', '--', 'sh', '-c', 'kill -STOP $$; echo continued'])
    ).stdout.trim();
    let pid = '';
    await until(
      async () => {
        const status = await json(['status', id]);
        const job = status.doc.result[0] as { nativeState: string | null; reason: string | null };
        pid = /pid (\d+)/.exec(job.reason ?? '')?.[1] ?? '';
        return job.nativeState === 'stopped' && pid !== '';
      },
      60_000,
      'the job to be seen stopped',
      200,
    );
    const list = await yonder(['list']);
    expect(list.stdout).toMatch(new RegExp(`^${id} .* running \\(stopped\\) `, 'm'));
    const status = await yonder(['status', id]);
    expect(status.stdout).toMatch(/State: +running \(stopped\)/);
    expect(status.stdout).toContain(`kill -CONT ${pid}`);
    process.kill(Number(pid), 'SIGCONT');
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(0);
    expect((await yonder(['logs', id])).stdout).toBe('continued\n');
  }, 120_000);
});
