import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalTransport } from '@yonder/core';
import { parseOptions } from '@yonder/core/backend-kit';
import { until } from '@yonder/test-helpers';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSlurmBackend } from './slurm-backend.js';
import { SlurmOptionsSchema } from './slurm-options.js';
import { requireCluster } from './test-support/cluster.js';
import { heldJob, releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';

// Issue 12: what is checked before sbatch runs, cancels, reruns and `profile check`.
beforeAll(() => requireCluster());
afterEach(() => releaseHeldJobs());

/** sbatch calls that submitted something (the probe's `sbatch --version` aside). */
function submits(calls: string[][]): string[][] {
  return calls.filter((args) => args[0] !== '--version');
}

describe('checks before sbatch', () => {
  it('refuses options that change submission itself, naming each, with no sbatch run and no directory', async () => {
    const { manager, shims, profile } = await shimmedSlurm();
    for (const words of [
      ['--test-only'],
      ['--hold', '-W'],
      ['--wrap=true'],
      ['--qu'],
      ['-a', '1-3'],
    ]) {
      const refused = manager.submit(
        { argv: ['true'], schedulerOptions: words },
        { profile: 'hpc' },
      );
      await expect(refused).rejects.toMatchObject({
        code: 'E_INVALID_JOB_SPEC',
        issues: [
          {
            path: `schedulerOptions.${words[0] === '--hold' ? 1 : 0}`,
            message: expect.stringContaining('is refused'),
          },
        ],
      });
    }
    expect(submits(shims.calls('sbatch'))).toEqual([]);
    const { jobs } = await manager.store.listJobs({});
    // Refused before submission: the submitter's refusal, not an infrastructure failure.
    expect(jobs.map(({ state, reason, failureKind }) => ({ state, reason, failureKind }))).toEqual(
      Array(5).fill({ state: 'failed', reason: 'submit-refused', failureKind: 'submission' }),
    );
    expect(entries(profile.workdir as string)).toEqual([]);
    // --hold stays allowed.
    const held = await manager.submit(
      { argv: ['true'], schedulerOptions: ['--hold'] },
      { profile: 'hpc' },
    );
    expect(held).toMatchObject({ state: 'pending' });
    execFileSync('scancel', [held.externalId as string]);
  }, 60_000);

  it('fails a submit whose working directory is missing or not a directory, naming cwd, before sbatch', async () => {
    const { manager, shims, profile } = await shimmedSlurm();
    const file = join(mkdtempSync(join(tmpdir(), 'yonder-cwd-')), 'plain file');
    writeFileSync(file, '');
    for (const [cwd, problem] of [
      ['/nonexistent/yonder', 'does not exist on the target'],
      [file, 'is not a directory on the target'],
    ] as const) {
      await expect(
        manager.submit({ argv: ['sh', '-c', 'echo hi > out.txt'], cwd }, { profile: 'hpc' }),
      ).rejects.toMatchObject({
        code: 'E_SUBMIT_REFUSED',
        message: `cwd: the job's working directory ${cwd} ${problem}; nothing was submitted.`,
      });
    }
    expect(submits(shims.calls('sbatch'))).toEqual([]);
    expect(entries(profile.workdir as string)).toEqual([]);
    // In a batch, the job with the bad cwd fails alone.
    const cwd = mkdtempSync(join(tmpdir(), 'yonder-cwd-ok-'));
    const jobs = await manager.submitMany(
      [
        { argv: ['sh', '-c', 'pwd > out.txt'], cwd },
        { argv: ['true'], cwd: '/nonexistent/yonder' },
      ],
      { profile: 'hpc' },
    );
    expect(jobs.map((job) => job.state)).toEqual(['pending', 'failed']);
    expect(jobs[1]).toMatchObject({ error: { message: expect.stringMatching(/^cwd: /) } });
    const { jobs: done } = await manager.wait([jobs[0]?.id as string], { timeoutMs: 60_000 });
    expect(done[0]?.state).toBe('succeeded');
    expect(readFileSync(join(cwd, 'out.txt'), 'utf8')).toBe(`${cwd}\n`);
  }, 90_000);
});

describe('cancel', () => {
  it('the backend sends one scancel for all the jobs of one cancel call', async () => {
    const { manager, shims, profile, state } = await shimmedSlurm();
    const held = await Promise.all([1, 2, 3].map(() => heldJob(manager)));
    const backend = createSlurmBackend();
    const records = await Promise.all(held.map(({ job }) => manager.store.getJob(job.id)));
    // Called without the manager, the backend is handed its options checked, as the manager does.
    const options = parseOptions({
      schema: SlurmOptionsSchema,
      options: profile.options ?? {},
      path: 'options',
      subject: 'The shimmed profile',
    });
    const outcomes = await backend.cancel(
      records.map((job) => ({
        id: job?.id as string,
        name: job?.name as string,
        externalId: job?.externalId as string,
        state: 'running' as const,
        createdAt: job?.createdAt as string,
        cancelRequested: true,
        profile,
        options,
        data: job?.data ?? {},
      })),
      { transport: createLocalTransport(), options, stateDirectory: state },
      { force: false },
    );
    expect([...outcomes.values()]).toEqual(Array(3).fill({ kind: 'sent' }));
    expect(shims.calls('scancel')).toEqual([held.map(({ job }) => job.externalId)]);
  }, 60_000);
});

describe('requeue=true', () => {
  it('a rerun gets the secrets and writes its own exit code; the secrets go once the job has ended', async () => {
    const { manager } = await shimmedSlurm(undefined, { requeue: true });
    const job = await manager.submit(
      {
        argv: [
          'sh',
          '-c',
          'echo "run ${SLURM_RESTART_COUNT:-0}: $S"; [ "${SLURM_RESTART_COUNT:-0}" != 0 ] || sleep 300',
        ],
        secrets: { S: 'sekrit' },
      },
      { profile: 'hpc' },
    );
    const jobDir = String(job.data.jobDir);
    const id = job.externalId as string;
    await until(
      () => readLog(jobDir).includes('run 0: sekrit'),
      60_000,
      'the first run starts',
      250,
    );
    execFileSync('scontrol', ['requeue', id]);
    // A requeued job waits about two minutes before it is eligible again; let it start now.
    await until(() => squeueState(id) === 'PENDING', 60_000, 'the job is pending again', 250);
    execFileSync('scontrol', ['update', `jobid=${id}`, 'StartTime=now']);
    const { jobs } = await manager.wait([job.id], { timeoutMs: 90_000 });
    expect(jobs[0]).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect(readLog(jobDir)).toContain('run 1: sekrit');
    expect(readFileSync(`${jobDir}/run-1/exit-code`, 'utf8')).toBe('0\n');
    for (const secrets of ['secrets.keep', 'secrets.sh', 'run-1/secrets.sh'])
      expect(existsSync(`${jobDir}/${secrets}`)).toBe(false);
  }, 150_000);
});

describe('profile check with a binDir', () => {
  it('runs the commands from binDir and fails, naming options.binDir, when they are not there', async () => {
    const { manager, shims, profile } = await shimmedSlurm();
    const check = async (binDir: string) => {
      await manager.saveProfile({ ...profile, name: 'checked', options: { binDir } });
      return (await manager.checkProfile('checked')).probe;
    };
    expect(await check(shims.binDir)).toMatchObject({ ok: true, problems: [] });
    expect(shims.calls('sbatch')).toEqual([['--version']]);
    expect(await check('/nonexistent')).toEqual({
      ok: false,
      facts: expect.any(Object),
      problems: ['options.binDir: /nonexistent is not a directory on the target'],
    });
    chmodSync(join(shims.binDir, 'scancel'), 0o644);
    shims.remove('sacct');
    expect((await check(shims.binDir))?.problems).toEqual([
      `options.binDir: ${shims.binDir} has no sacct`,
      `options.binDir: ${shims.binDir}/scancel is not an executable file`,
    ]);
  }, 60_000);
});

/** The names in a directory; none when it was never made. */
function entries(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

function readLog(jobDir: string): string {
  return existsSync(`${jobDir}/job.log`) ? readFileSync(`${jobDir}/job.log`, 'utf8') : '';
}

function squeueState(id: string): string {
  return execFileSync(
    'squeue',
    ['--noheader', '--states=all', `--jobs=${id},${id}`, '--format=%T'],
    {
      encoding: 'utf8',
    },
  ).trim();
}
