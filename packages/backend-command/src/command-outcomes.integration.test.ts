import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobManager } from '@yonder/core';
import { afterEach, describe, expect, it } from 'vitest';
import { commandManager, TOYQ, toyqProfile } from './test-support/toyq.js';

// Issue 12 for the command backend: a sick status command changes nothing; cwd is checked first.
const queueDir = mkdtempSync(join(tmpdir(), 'yonder-toyq-'));
process.env.TOYQ_DIR = queueDir;

const releases: string[] = [];
afterEach(() => {
  for (const file of releases.splice(0)) writeFileSync(file, '');
});

/** A program in a fresh directory: `body` after `#!/bin/sh`. */
function program(name: string, body: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'yonder-cmd-prog-')), name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

/** A manager with a toyq profile `q` whose status (and submit) templates are the given ones. */
async function toyq(options: Partial<Record<'status' | 'submit', string>> = {}) {
  const manager = commandManager();
  const profile = toyqProfile('q', options);
  await manager.saveProfile(profile);
  return { manager, profile };
}

/** Submit a job that runs until released, and wait until its wrapper has started. */
async function startedJob(manager: JobManager) {
  const file = join(mkdtempSync(join(tmpdir(), 'yonder-release-')), 'go');
  releases.push(file);
  const job = await manager.submit(
    { argv: ['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.2; done', 'sh', file] },
    { profile: 'q' },
  );
  const jobDir = String(job.data.jobDir);
  const deadline = Date.now() + 20_000;
  while (!existsSync(`${jobDir}/wrapper.pid`)) {
    if (Date.now() > deadline) throw new Error('the job never started');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { job, jobDir, release: () => writeFileSync(file, '') };
}

/** Release the job and wait until its wrapper has recorded the exit code. */
async function finish(started: Awaited<ReturnType<typeof startedJob>>): Promise<void> {
  started.release();
  const deadline = Date.now() + 20_000;
  while (!existsSync(`${started.jobDir}/exit-code`)) {
    if (Date.now() > deadline) throw new Error('the job never ended');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the command backend’s status command', () => {
  it('exiting 0 with an error on stderr is a failed query: the job’s state does not change', async () => {
    const sick = program('status', `echo 'qstat: error: cannot reach the server' >&2\nexit 0`);
    const { manager } = await toyq({ status: `${sick} {external_ids}` });
    const started = await startedJob(manager);
    for (let poll = 0; poll < 4; poll += 1) {
      const [job] = await manager.status([started.job.id]);
      expect(job).toMatchObject({
        state: 'pending',
        misses: 0,
        error: {
          code: 'E_SCHEDULER_UNAVAILABLE',
          message: expect.stringContaining('qstat: error'),
        },
      });
    }
    // Even with the job ended, a sick answer is not taken for the job's end: the file is.
    await finish(started);
    expect((await manager.status([started.job.id]))[0]?.state).toBe('pending');
  }, 40_000);

  it.each([
    ['batched', `${TOYQ}/toyq-status {external_ids}`],
    ['per job', `${TOYQ}/toyq-status {external_id}`],
  ])(
    'an empty answer (%s) for a job that started is a failed query; its exit-code file settles it',
    async (_title, status) => {
      const empty = program('status', 'exit 0');
      const { manager, profile } = await toyq({ status });
      const started = await startedJob(manager);
      expect((await manager.status([started.job.id]))[0]?.state).toBe('running');
      // The status command goes quiet while the job runs (swap the template in its snapshot).
      await manager.store.updateJob(started.job.id, (current) => ({
        ...current,
        profileSnapshot: {
          ...profile,
          options: { ...profile.options, status: status.replace(`${TOYQ}/toyq-status`, empty) },
        },
      }));
      for (let poll = 0; poll < 4; poll += 1) {
        const [job] = await manager.status([started.job.id]);
        expect(job).toMatchObject({
          state: 'running',
          misses: 0,
          error: { message: expect.stringContaining('an implausible answer') },
        });
      }
      await finish(started);
      const [done] = await manager.status([started.job.id]);
      expect(done).toMatchObject({ state: 'succeeded', exitCode: 0 });
      expect(done?.history.at(-1)?.source).toBe('exit-code-file');
    },
    40_000,
  );

  it('a healthy answer without the job, for a job that never started, is a miss within the grace', async () => {
    // A queue that accepts jobs and never runs them; its status lists only another job.
    const submit = program('submit', 'echo "Job 4242 queued"');
    const other = program('status', 'echo "1 RUNNING"');
    const { manager } = await toyq({
      submit: `${submit} {script}`,
      status: `${other} {external_ids}`,
    });
    const job = await manager.submit({ argv: ['true'] }, { profile: 'q' });
    for (let poll = 1; poll <= 4; poll += 1) {
      const [current] = await manager.status([job.id]);
      expect(current).toMatchObject({ state: 'pending', misses: poll, error: null });
    }
  }, 40_000);
});

describe('the command backend’s submit', () => {
  it('fails a job whose working directory is missing or not a directory, naming cwd, before the submit command', async () => {
    const calls = join(mkdtempSync(join(tmpdir(), 'yonder-cmd-calls-')), 'calls');
    const submit = program('submit', `echo "$@" >> '${calls}'\nexec ${TOYQ}/toyq-submit "$@"`);
    const { manager, profile } = await toyq({ submit: `${submit} {script}` });
    const file = join(mkdtempSync(join(tmpdir(), 'yonder-cwd-')), 'plain file');
    writeFileSync(file, '');
    for (const [cwd, problem] of [
      ['/nonexistent/yonder', 'does not exist on the target'],
      [file, 'is not a directory on the target'],
    ] as const) {
      await expect(manager.submit({ argv: ['true'], cwd }, { profile: 'q' })).rejects.toMatchObject(
        {
          code: 'E_SUBMIT_REFUSED',
          message: `cwd: the job's working directory ${cwd} ${problem}; nothing was submitted.`,
        },
      );
    }
    expect(existsSync(calls)).toBe(false);
    const workdir = profile.workdir as string;
    expect(existsSync(workdir) ? readdirSync(workdir) : []).toEqual([]);
    const cwd = mkdtempSync(join(tmpdir(), 'yonder-cwd-ok-'));
    const job = await manager.submit({ argv: ['sh', '-c', 'pwd > here'], cwd }, { profile: 'q' });
    const { jobs } = await manager.wait([job.id], { timeoutMs: 20_000 });
    expect(jobs[0]?.state).toBe('succeeded');
    expect(readFileSync(join(cwd, 'here'), 'utf8')).toBe(`${cwd}\n`);
  }, 40_000);
});
