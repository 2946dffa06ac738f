/** `yonder list --all` from the listing index through the real CLI: the same jobs and bytes as the listing of records, `--since`, `--limit`, filters, and a reader that goes away. */
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleJob } from '@yonder/core/conformance';
import { createFsStore } from '@yonder/store-fs';
import { CLI_BIN, requireCliBuild, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
const yonder = (args: string[]) => runCli(args, { state });
const ids: string[] = [];

/** Date every file and directory of the ledger's jobs a minute back, as an old ledger is. */
function settle(): void {
  const past = new Date(Date.now() - 60_000);
  const jobs = join(state, 'jobs');
  for (const shard of readdirSync(jobs)) {
    for (const name of readdirSync(join(jobs, shard)))
      utimesSync(join(jobs, shard, name), past, past);
    utimesSync(join(jobs, shard), past, past);
  }
}

beforeAll(async () => {
  requireCliBuild();
  state = mkdtempSync(join(tmpdir(), 'yonder-list-all-'));
  for (const argv of [['true'], ['sh', '-c', 'exit 3'], ['echo', 'a "quoted" \t tab']]) {
    const submit = await yonder(['submit', '--name', `n ${argv[0]} ünï`, '--', ...argv]);
    expect(submit.code, submit.stderr).toBe(0);
    ids.push(submit.stdout.trim());
  }
  await yonder(['wait', ...ids, '--timeout', '60']);
  settle();
}, 120_000);

afterAll(() => rmSync(state, { recursive: true, force: true }));

describe('list --all', () => {
  it('prints what the listing of records prints, from the index once it is built', async () => {
    // `list` without --all reads the records (active and the 20 newest): the same three jobs.
    const fromRecords = await yonder(['list', '--json', '--no-refresh']);
    const first = await yonder(['list', '--all', '--json', '--no-refresh']);
    expect(first.stdout).toBe(fromRecords.stdout);
    expect(lstatSync(join(state, 'listing.index')).isFile()).toBe(true);
    const again = await yonder(['list', '--all', '--json']);
    expect(again.stdout).toBe(fromRecords.stdout);
    // The same table but for the ages, which move with the clock.
    const ageless = (text: string) => text.replace(/[0-9]+[smhd] ago$/gm, '');
    const table = await yonder(['list', '--all', '--no-refresh']);
    expect(ageless(table.stdout)).toBe(ageless((await yonder(['list', '--no-refresh'])).stdout));
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +NAME +PROFILE +STATE +EXIT +CREATED$/);
    const quiet = await yonder(['list', '--all', '-q', '--no-refresh']);
    expect(quiet.stdout).toBe(`${[...ids].reverse().join('\n')}\n`);
    const format = await yonder([
      'list',
      '--all',
      '--format',
      '{state} {exitCode}',
      '--no-refresh',
    ]);
    expect(format.stdout).toBe('succeeded 0\nfailed 3\nsucceeded 0\n');
  });

  it('--limit keeps the newest, --since those created since, --state and --profile filter', async () => {
    const limited = JSON.parse((await yonder(['list', '--all', '--limit', '2', '--json'])).stdout);
    expect(limited.result.map((job: { id: string }) => job.id)).toEqual([ids[2], ids[1]]);
    const since = await yonder(['list', '--all', '--since', '1h', '-q']);
    expect(since.stdout.trim().split('\n')).toHaveLength(3);
    const future = await yonder(['list', '--all', '--since', '2099-01-01', '--json']);
    expect(JSON.parse(future.stdout).result).toEqual([]);
    const failed = await yonder(['list', '--all', '--state', 'failed', '-q']);
    expect(failed.stdout).toBe(`${ids[1]}\n`);
    const local = await yonder(['list', '--all', '--profile', 'LOCAL', '-q']);
    expect(local.stdout).toBe(`${[...ids].reverse().join('\n')}\n`);
    const nope = await yonder(['list', '--all', '--profile', 'nope', '--json']);
    expect(JSON.parse(nope.stdout).result).toEqual([]);
    expect(nope.stderr).toContain('nope');
    // The same options without --all, on the listing of records.
    const recent = await yonder(['list', '--limit', '1', '-q']);
    expect(recent.stdout).toBe(`${ids[2]}\n`);
    for (const bad of [
      ['--limit', '0'],
      ['--limit', '-3'],
      ['--since', 'yesterday'],
      ['--since', '$(id)'],
    ]) {
      const result = await yonder(['list', '--all', ...bad]);
      expect(result.code, bad.join(' ')).toBe(2);
      expect(result.stderr).toContain(bad[0]);
    }
  });

  it('a reader that goes away ends it quietly with 141, mid-listing', async () => {
    // More than a pipe holds: 2000 finished jobs, written through the store.
    const large = mkdtempSync(join(tmpdir(), 'yonder-list-epipe-'));
    try {
      const store = createFsStore({ location: large });
      for (let n = 0; n < 2000; n += 1)
        await store.createJob(sampleJob({ state: 'succeeded', exitCode: 0 }));
      for (const args of ['list --all --json', 'list --all']) {
        const run = spawnSync(
          'bash',
          ['-c', `node ${JSON.stringify(CLI_BIN)} ${args} | head -c 10; echo " \${PIPESTATUS[0]}"`],
          { env: { ...process.env, YONDER_STATE_DIR: large, YONDER_CONFIG: '' }, encoding: 'utf8' },
        );
        expect(run.stdout, args).toMatch(/^.{10} 141\n$/s);
        expect(run.stderr, args).toBe('');
      }
    } finally {
      rmSync(large, { recursive: true, force: true });
    }
  }, 120_000);
});
