/** Forgetting jobs and failures said out loud, through the real CLI: rm, rm --force, prune and the config's retention; a target whose status command is broken warned about once, given up on by wait, and its job removable. */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processGroup, requireCliBuild, runCli, runCliJson, until } from '@yonder/test-helpers';
import { afterEach, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';

const TOYQ = new URL('../../backend-command/examples/toyq', import.meta.url).pathname;

let state: string;
let work: string;
let env: Record<string, string>;
const yonder = (args: string[], extra: Record<string, string> = {}) =>
  runCli(args, { state, cwd: work, env: { ...env, ...extra } });
const json = (args: string[]) => runCliJson(args, { state, cwd: work, env });

beforeAll(() => requireCliBuild());
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'yonder-forget-'));
  work = mkdtempSync(join(tmpdir(), 'yonder forget work '));
  env = { TOYQ_DIR: join(work, 'queue') };
});
afterEach(() => {
  rmSync(state, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

async function finished(argv: string[]): Promise<{ id: string; jobDir: string }> {
  const id = (await yonder(['submit', '--', ...argv])).stdout.trim();
  await yonder(['wait', id, '--timeout', '60']);
  const [job] = (await json(['status', id])).doc.result;
  return { id, jobDir: job.data.jobDir };
}

describe('rm', () => {
  it('forgets a finished job and removes its job directory, never what a link in it points at', async () => {
    const precious = join(work, 'precious.txt');
    writeFileSync(precious, 'keep me\n');
    const { id, jobDir } = await finished([
      'sh',
      '-c',
      'ln -s "$1" "$YONDER_JOB_DIR/link" && ln -s "$2" "$YONDER_JOB_DIR/dirlink"',
      'sh',
      precious,
      work,
    ]);
    expect(existsSync(join(jobDir, 'link'))).toBe(true);
    const rm = await yonder(['rm', id]);
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toBe(`${id} removed\n`);
    expect(existsSync(jobDir)).toBe(false);
    expect(readFileSync(precious, 'utf8')).toBe('keep me\n');
    const gone = await json(['status', id]);
    expect(gone.doc.error.code).toBe('E_NO_SUCH_JOB');
    expect((await yonder(['rm', id])).code).toBe(1);
  }, 90_000);

  it('forgets a job that ended since the last refresh (asks its target first, never calls it running)', async () => {
    const id = (await yonder(['submit', '--', 'true'])).stdout.trim();
    const [job] = (await json(['status', id, '--no-refresh'])).doc.result;
    await until(() => existsSync(join(job.data.jobDir, 'exit-code')), 30_000, 'the job to end');
    // Nothing has polled it since it ended: its record still says running.
    expect((await json(['status', id, '--no-refresh'])).doc.result[0].state).toBe('running');
    const rm = await json(['rm', id]);
    expect(rm.code, JSON.stringify(rm.doc)).toBe(0);
    expect(rm.doc.result).toMatchObject([{ id, state: 'succeeded', removed: true }]);
  }, 90_000);

  it('refuses an active job; --force cancels it, then forgets it', async () => {
    const id = (await yonder(['submit', '--', 'sleep', '300'])).stdout.trim();
    const [job] = (await json(['status', id])).doc.result;
    const refused = await json(['rm', id]);
    expect(refused.code).toBe(1);
    expect(refused.doc.error.code).toBe('E_JOB_ACTIVE');
    expect(refused.doc.error.message).toContain('--force');
    expect((await json(['status', id])).doc.result[0].state).toBe('running');
    const forced = await json(['rm', '--force', id]);
    expect(forced.code, JSON.stringify(forced.doc)).toBe(0);
    expect(forced.doc.result).toEqual([
      { id, state: 'cancelled', removed: true, files: 'removed' },
    ]);
    await until(() => processGroup(job.data.pid).length === 0, 30_000, 'the job to be gone');
    expect(existsSync(job.data.jobDir)).toBe(false);
  }, 90_000);
});

describe('prune', () => {
  it('forgets finished jobs older than a duration, by state, with --dry-run, or by the config’s retention', async () => {
    const ok = await finished(['true']);
    const bad = await finished(['sh', '-c', 'exit 3']);
    const running = (await yonder(['submit', '--', 'sleep', '300'])).stdout.trim();
    try {
      expect((await yonder(['prune', '--older-than', '1h'])).stdout).toBe('');
      const dry = await yonder(['prune', '--older-than', '0s', '--dry-run']);
      expect(dry.stdout.split('\n').sort().join('\n')).toBe(
        ['', `${bad.id} would be removed`, `${ok.id} would be removed`].sort().join('\n'),
      );
      expect(existsSync(ok.jobDir) && existsSync(bad.jobDir)).toBe(true);
      const failed = await yonder(['prune', '--older-than', '0s', '--state', 'failed']);
      expect(failed.stdout).toBe(`${bad.id} removed\n`);
      expect(existsSync(bad.jobDir)).toBe(false);
      expect(existsSync(ok.jobDir)).toBe(true);
      const bare = await yonder(['prune']);
      expect(bare.code).toBe(2);
      expect(bare.stderr).toContain('retention');
      const config = join(work, 'config');
      mkdirSync(config, { mode: 0o700 });
      writeFileSync(join(config, 'config.json'), JSON.stringify({ retention: '0s' }));
      const retained = await yonder(['prune'], { YONDER_CONFIG: join(config, 'config.json') });
      expect(retained.code, retained.stderr).toBe(0);
      expect(retained.stdout).toBe(`${ok.id} removed\n`);
      const left = (await yonder(['list', '--all', '-q', '--no-refresh'])).stdout;
      expect(left).toBe(`${running}\n`);
    } finally {
      await yonder(['cancel', running]);
    }
  }, 120_000);
});

describe('a target that cannot be polled', () => {
  it('is warned about once per target; wait --give-up-after ends with 69; rm --force forgets the job', async () => {
    // A path without spaces: a command template splits on them.
    const broken = join(state, '..', `${state.split('/').pop()}-broken-status`);
    writeFileSync(broken, '#!/bin/sh\necho "status: the queue is down" >&2\nexit 1\n');
    chmodSync(broken, 0o755);
    onTestFinished(() => rmSync(broken, { force: true }));
    const add = await yonder([
      'profile',
      'add',
      'queue',
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
    const ids = [];
    for (const _ of [1, 2])
      ids.push(
        (await yonder(['submit', '--profile', 'queue', '--', 'sleep', '300'])).stdout.trim(),
      );
    const list = await yonder(['list']);
    expect(list.code).toBe(0);
    const warnings = list.stderr.split('\n').filter((line) => line.includes('cannot poll'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('(2 jobs)');
    expect(warnings[0]).toContain('the queue is down');
    const wait = await yonder([
      'wait',
      ids[0] as string,
      '--give-up-after',
      '2s',
      '--timeout',
      '60',
    ]);
    expect(wait.code).toBe(69);
    expect(wait.stderr.split('\n').filter((line) => line.includes('cannot poll'))).toHaveLength(1);
    expect(wait.stderr).toContain('gave up');
    const status = await yonder(['status', ids[0] as string]);
    expect(status.stderr).toContain('cannot poll');
    // Forgotten although it never reported an end: its files are left (it may still be running).
    const rm = await json(['rm', '--force', ...ids]);
    expect(rm.code, JSON.stringify(rm.doc)).toBe(1);
    for (const entry of rm.doc.result) {
      expect(entry).toMatchObject({ state: 'pending', removed: true, files: 'kept' });
      expect(entry.message).toContain(
        'forgotten while pending: status command: status: the queue is down',
      );
    }
    expect((await yonder(['list', '--all', '-q', '--no-refresh'])).stdout).toBe('');
    expect(existsSync(join(work, 'jobs', ids[0] as string))).toBe(true);
  }, 120_000);
});
