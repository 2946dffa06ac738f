import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleJob } from '@yonder/core/conformance';
import { createFsStore } from '@yonder/store-fs';
import {
  CLI_BIN,
  type CliOptions,
  logWrites,
  referenceTail,
  requireCliBuild,
  runCli,
  spawnCli,
  until,
} from '@yonder/test-helpers';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectBytes, runBytes, shell } from './test-support/run-bytes.js';

let state: string;
let scratch: string;
let files = 0;

const options = (env: Record<string, string> = {}): CliOptions => ({ state, env });

function file(bytes: Buffer): string {
  files += 1;
  const path = join(scratch, `piece-${files}`);
  writeFileSync(path, bytes);
  return path;
}

async function submit(...argv: string[]): Promise<string> {
  const result = await runCli(['submit', '--', ...argv], options());
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trim();
}

async function finished(...argv: string[]): Promise<string> {
  const id = await submit(...argv);
  expect((await runCli(['wait', id, '--timeout', '120'], options())).code).not.toBe(124);
  return id;
}

/** The job's log file on this machine. */
function logPath(id: string): string {
  return join(state, 'runs', id, 'job.log');
}

beforeAll(() => {
  requireCliBuild();
  state = mkdtempSync(join(tmpdir(), 'yonder-logs-state-'));
  scratch = mkdtempSync(join(tmpdir(), 'yonder-logs-bytes-'));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

describe('yonder logs on the local backend, byte for byte', () => {
  it('logs, --lines, --bytes, --all and --follow of a slow writer return exactly its bytes, in chunks of any size', async () => {
    await fc.assert(
      fc.asyncProperty(
        logWrites,
        fc.integer({ min: 1, max: 17 }),
        fc.integer({ min: 0, max: 30 }),
        async (writes, chunk, count) => {
          const bytes = Buffer.concat(writes);
          const env = { YONDER_LOG_CHUNK_BYTES: String(chunk) };
          // A slow writer: its pieces a moment apart, followed from before the first.
          const id = await submit(
            'sh',
            '-c',
            'for f; do sleep 0.1; cat "$f"; done',
            'sh',
            ...writes.map(file),
          );
          const follow = await runBytes(['logs', id, '--follow', '--all'], options(env));
          expect(follow.code, follow.stderr).toBe(0);
          expect(follow.stdout.equals(bytes)).toBe(true);
          expect(follow.stderr).toBe(`yonder: job ${id} succeeded (exit 0)\n`);
          const all = await runBytes(['logs', id, '--all'], options(env));
          expect(all.stdout.equals(bytes)).toBe(true);
          const lines = await runBytes(['logs', id, '--lines', String(count)], options(env));
          expect(lines.stdout.equals(referenceTail(bytes, count))).toBe(true);
          const tail = await runBytes(['logs', id, '-c', String(count)], options(env));
          expect(tail.stdout.equals(bytes.subarray(Math.max(0, bytes.length - count)))).toBe(true);
          // An ended job's log with no range is all of it, as docker and kubectl print it.
          const plain = await runBytes(['logs', id], options());
          expect(plain.stdout.equals(bytes)).toBe(true);
          expect(readFileSync(logPath(id)).equals(bytes)).toBe(true);
        },
      ),
      { numRuns: 12 },
    );
  }, 600_000);

  it('--lines 2000000 of a 2.5-million-line log is exactly the last 2,000,000 lines (tail -n)', async () => {
    const id = await finished('sh', '-c', 'seq 1 2500000; printf "%s" "no final newline ☃"');
    const out = join(scratch, 'lines.out');
    const result = shell(
      `node ${CLI_BIN} logs ${id} --lines 2000000 > ${out} && tail -n 2000000 ${logPath(id)} | cmp - ${out}`,
      options(),
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
  }, 180_000);

  it('a count no log can reach (tail -n 99999999999999999999) gives all of it, exactly', async () => {
    const bytes = Buffer.concat([randomBytes(3000), Buffer.from('\nlast, no newline ☃')]);
    const id = await finished('cat', file(bytes));
    for (const args of [
      ['-n', '99999999999999999999'],
      ['-c', '9223372036854775807'],
      ['-c', '99999999999999999999'],
      ['-n', String(Number.MAX_SAFE_INTEGER)],
    ]) {
      const result = await runBytes(['logs', id, ...args], options());
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      expect(result.stdout.equals(bytes), args.join(' ')).toBe(true);
    }
  });

  it('follows a 100 MB burst to the same bytes (cmp), in memory that stays small', async () => {
    const burst = file(randomBytes(100 * 1024 * 1024));
    const id = await submit('cat', burst);
    const out = join(scratch, 'burst.out');
    const rss = join(scratch, 'burst.rss');
    const fd = openSync(out, 'w');
    const run = spawnSync(
      '/usr/bin/time',
      ['-f', '%M', '-o', rss, process.execPath, CLI_BIN, 'logs', id, '--follow', '--all'],
      {
        stdio: ['ignore', fd, 'pipe'],
        env: { ...process.env, YONDER_STATE_DIR: state, NO_COLOR: '1' },
        timeout: 300_000,
      },
    );
    closeSync(fd);
    expect(run.status, run.stderr.toString()).toBe(0);
    expect(spawnSync('cmp', [burst, out]).status).toBe(0);
    expect(spawnSync('cmp', [burst, logPath(id)]).status).toBe(0);
    // Peak resident memory, in KiB: a 100 MB log read through 4 MiB chunks stays far below it.
    expect(Number(readFileSync(rss, 'utf8').trim())).toBeLessThan(100 * 1024);
  }, 300_000);
});

describe('yonder logs: how it ends', () => {
  it('--follow ends with the job: one line on stderr says how, and the exit status is 0', async () => {
    const id = await submit('sh', '-c', 'echo one; sleep 1; printf two; exit 3');
    const follow = await runBytes(['logs', id, '-f'], options());
    expect(follow.code).toBe(0);
    expect(follow.stdout.toString()).toBe('one\ntwo');
    expect(follow.stderr).toBe(`yonder: job ${id} failed (exit 3)\n`);
    expect((await runCli(['wait', id], options())).code).toBe(3);
  }, 60_000);

  it('Ctrl-C stops --follow with exit status 130, and keeps the tail it read', async () => {
    const id = await submit('sh', '-c', 'echo started; exec sleep 300');
    const child = spawnCli(['logs', id, '--follow'], options());
    const done = collectBytes(child);
    let seen = '';
    child.stdout?.on('data', (chunk) => {
      seen += chunk;
    });
    await until(() => seen.includes('started'), 30_000, 'the first line');
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(130);
    expect(result.stdout.toString()).toBe('started\n');
    expect(result.stderr).toBe('');
    const record = JSON.parse(
      readFileSync(join(state, 'jobs', id.slice(0, 2), `${id}.json`), 'utf8'),
    );
    expect(Buffer.from(record.logTail.data, 'base64').toString()).toBe('started\n');
    await runCli(['cancel', id], options());
  }, 60_000);

  it('says why there is no log: not started yet, nothing written yet, or gone', async () => {
    const quiet = await submit('sleep', '300');
    const waiting = await runCli(['logs', quiet], options());
    expect(waiting.code).toBe(0);
    expect(waiting.stdout).toBe('');
    await runCli(['cancel', quiet], options());
    const id = await finished('echo', 'hello');
    rmSync(logPath(id));
    const gone = await runCli(['logs', id], options());
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(
      `yonder: job ${id} ran, but its log is gone (${logPath(id)} does not exist).\n`,
    );
    const followed = await runCli(['logs', id, '-f'], options());
    expect(followed.code).toBe(1);
    expect(followed.stderr).toContain('ran, but its log is gone');
  }, 60_000);

  it('--json: one document with the bytes in base64 and their offsets; NDJSON chunks with --follow', async () => {
    const bytes = Buffer.from('caf\xe9\n☃\nend', 'latin1');
    const id = await finished('cat', file(bytes));
    const doc = JSON.parse((await runCli(['logs', id, '--json', '--all'], options())).stdout);
    expect(doc).toEqual({
      ok: true,
      result: {
        data: bytes.toString('base64'),
        job: id,
        exists: true,
        start: 0,
        end: bytes.length,
        size: bytes.length,
      },
    });
    const tail = JSON.parse((await runCli(['logs', id, '--json', '-n', '1'], options())).stdout);
    expect(Buffer.from(tail.result.data, 'base64').toString()).toBe('end');
    expect(tail.result.start).toBe(bytes.length - 3);
    const lines = (
      await runCli(['logs', id, '-f', '--json', '--all'], options({ YONDER_LOG_CHUNK_BYTES: '4' }))
    ).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const chunks = lines.filter((line) => line.type === 'chunk');
    expect(chunks.length).toBe(Math.ceil(bytes.length / 4));
    expect(
      Buffer.concat(chunks.map((line) => Buffer.from(line.data, 'base64'))).equals(bytes),
    ).toBe(true);
    expect(lines.at(-1)).toMatchObject({
      type: 'end',
      end: bytes.length,
      job: { id, state: 'succeeded', exitCode: 0 },
    });
  }, 60_000);
});

describe('a closed pipe is not an error', () => {
  it('`yonder logs ID | head -1` and `yonder list --all | head -1` print one line, quietly, with the SIGPIPE status', async () => {
    const id = await finished('seq', '1', '500000');
    // A large ledger: 3000 finished jobs, a table far larger than a pipe holds.
    const large = mkdtempSync(join(tmpdir(), 'yonder-logs-ledger-'));
    const store = createFsStore({ location: large });
    for (let index = 0; index < 3000; index += 1)
      await store.createJob(sampleJob({ state: 'succeeded', exitCode: 0 }));
    await store.close();
    for (const [args, ledger, head] of [
      [`logs ${id} --all`, state, '-1'],
      [`logs ${id} -f --all`, state, '-1'],
      [`logs ${id} --all --json`, state, '-c 100'],
      ['list --all', large, '-1'],
      ['list --all --json', large, '-c 100'],
    ] as const) {
      const result = shell(
        `set -o pipefail; node ${CLI_BIN} ${args} | head ${head}; echo "status \${PIPESTATUS[0]}" >&2`,
        { state: ledger },
      );
      expect(result.stderr, args).toBe('status 141\n');
      if (head === '-1') expect(result.stdout.toString().split('\n').length, args).toBe(2);
      else expect(result.stdout.length, args).toBe(100);
    }
    rmSync(large, { recursive: true, force: true });
  }, 180_000);

  it('every command ends quietly when stdout is closed before it writes', async () => {
    const id = await finished('seq', '1', '1000');
    const running = await submit('sleep', '300');
    const commands = [
      ['--version'],
      ['--help'],
      ['submit', '--', 'true'],
      ['list'],
      ['ls', '--all'],
      ['list', '--json'],
      ['status', id],
      ['status', id, '--json'],
      ['wait', id],
      ['logs', id],
      ['logs', id, '--follow'],
      ['logs', id, '--json'],
      ['logs', '--help'],
      ['cancel', running],
      ['profile', 'add', 'closed', '--backend', 'local'],
      ['profile', 'list'],
      ['profile', 'show', 'closed'],
      ['profile', 'check', 'closed'],
      ['profile', 'schema'],
      ['profile', 'remove', 'closed'],
      ['plugins'],
      ['status', 'no-such-job', '--json'],
    ];
    for (const args of commands) {
      const child = spawnCli(args, options());
      child.stdout?.destroy();
      const result = await collectBytes(child);
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({
        args,
        code: 141,
        stderr: '',
      });
    }
  }, 180_000);
});
