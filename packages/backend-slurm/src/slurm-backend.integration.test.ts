import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type JobManager, type JobRecord, YonderError } from '@yonder/core';
import { backendConformance } from '@yonder/core/conformance';
import { asUser, requireUsers, until } from '@yonder/test-helpers';
import { beforeAll, describe, expect, it } from 'vitest';
import { slurmJobName } from './sbatch-options.js';
import { createSlurmBackend } from './slurm-backend.js';
import { requireCluster, slurmManager, untilPurged, workdir } from './test-support/cluster.js';

beforeAll(() => requireCluster());

const conformanceWorkdir = workdir();
backendConformance(it, () => createSlurmBackend(), {
  profile: { name: 'hpc', backend: 'slurm', workdir: conformanceWorkdir },
  jobTimeoutMs: 90_000,
});

describe('slurm backend against the test cluster', () => {
  // Started first, checked last: these take a minute or more of Slurm's time.
  const slow = slurmManager();
  const slowWorkdir = workdir();
  let timeoutJob = '';
  let purgedJob = '';

  beforeAll(async () => {
    await slow.manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: slowWorkdir });
    timeoutJob = (
      await slow.manager.submit(
        { argv: ['sleep', '600'], resources: { time: '0:05' } },
        { profile: 'hpc' },
      )
    ).id;
    purgedJob = (await slow.manager.submit({ argv: ['sh', '-c', 'exit 5'] }, { profile: 'hpc' }))
      .id;
  });

  it('keeps a held job pending with its reason, then cancels it; its log does not exist yet', async () => {
    const { manager } = slurmManager();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    const job = await manager.submit(
      { argv: ['true'], schedulerOptions: ['--hold'] },
      { profile: 'hpc' },
    );
    // Slurm gives the hold its reason a moment after the submit: poll until it does.
    let held: JobRecord | undefined;
    await until(
      async () => {
        [held] = await manager.status([job.id]);
        return held?.reason === 'JobHeldUser';
      },
      30_000,
      'Slurm to report the hold',
      250,
    );
    expect(held).toMatchObject({ state: 'pending', nativeState: 'PENDING', reason: 'JobHeldUser' });
    const { chunk } = await manager.logs(job.id);
    expect(chunk).toMatchObject({
      exists: false,
      message: expect.stringContaining('not started yet'),
    });
    const [cancelled] = await manager.cancel([job.id], { waitMs: 30_000 });
    expect(cancelled).toMatchObject({
      state: 'cancelled',
      nativeState: expect.stringMatching(/^CANCELLED/),
    });
  }, 60_000);

  it('reports the exact exit status, claims no signal an exit status cannot tell, and without the wrapper’s file says only what sacct knows', async () => {
    const { manager } = slurmManager();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    const exited = await manager.submit({ argv: ['sh', '-c', 'exit 137'] }, { profile: 'hpc' });
    const killed = await manager.submit({ argv: ['sh', '-c', 'kill -9 $$'] }, { profile: 'hpc' });
    const bare = await manager.submit({ argv: ['sh', '-c', 'exit 137'] }, { profile: 'hpc' });
    // The wrapper's exit-code file of `bare` is gone before yonder reads it.
    await until(
      () =>
        execFileSync(
          'sacct',
          ['-n', '-P', '-X', `--jobs=${bare.externalId}`, '--format=State,ExitCode'],
          { encoding: 'utf8' },
        ).trim() === 'FAILED|9:0',
      90_000,
      'sacct records the job FAILED 9:0',
      500,
    );
    rmSync(join(String(bare.data.jobDir), 'exit-code'));
    const { jobs } = await manager.wait([exited.id, killed.id, bare.id], { timeoutMs: 90_000 });
    // An `exit 137` by itself and a SIGKILL leave the wrapper the same status: it is an exit
    // code, with the signal named only as a possibility.
    for (const job of jobs.slice(0, 2))
      expect(job).toMatchObject({
        state: 'failed',
        exitCode: 137,
        signal: null,
        reason: 'exit code 137 (or killed by SIGKILL)',
        failureKind: 'application',
        nativeState: 'FAILED',
      });
    // sacct shows 137 as 9:0 (up to 25.05): not "exit code 9".
    expect(jobs[2]).toMatchObject({
      state: 'failed',
      exitCode: null,
      signal: null,
      reason:
        "exit code 9 or 137 (Slurm's accounting shows exit codes of 128 and more reduced by 128)",
      failureKind: 'application',
    });
  }, 150_000);

  it('refuses an unknown partition clearly; nothing is recorded as submitted and no directory is left', async () => {
    const { manager } = slurmManager();
    const dir = workdir();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: dir });
    await expect(
      manager.submit({ argv: ['true'], resources: { partition: 'nosuch' } }, { profile: 'hpc' }),
    ).rejects.toMatchObject({
      code: 'E_SUBMIT_REFUSED',
      message: expect.stringMatching(/invalid partition/i),
    });
    const { jobs } = await manager.store.listJobs({});
    expect(jobs).toHaveLength(1);
    // The submitter's error, not the system's.
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      reason: 'submit-refused',
      failureKind: 'submission',
      externalId: null,
    });
    expect(existsSync(`${dir}/${jobs[0]?.id}`)).toBe(false);
  }, 60_000);

  it('refuses scheduler options that would break the job’s identity or files', async () => {
    const { manager } = slurmManager();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    await expect(
      manager.submit({ argv: ['true'], schedulerOptions: ['--output=/tmp/x'] }, { profile: 'hpc' }),
    ).rejects.toMatchObject({
      code: 'E_INVALID_JOB_SPEC',
    });
    await expect(
      manager.submit({ argv: ['true'], schedulerOptions: ['-J', 'x'] }, { profile: 'hpc' }),
    ).rejects.toMatchObject({
      code: 'E_INVALID_JOB_SPEC',
    });
  }, 30_000);

  it('submits a batch in one remote command; a refused job fails alone', async () => {
    const { manager, transport } = slurmManager();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    transport.commands.length = 0;
    const specs = [
      {
        argv: ['sh', '-c', 'printf "%s|%s|" "$A" "$S"; cat "$1"', 'sh', '{settings}'],
        env: { A: 'a b' },
        secrets: { S: "s'$(x)" },
        settings: { k: 'v' },
      },
      { argv: ['true'], resources: { partition: 'nosuch' } },
      { argv: ['sh', '-c', 'echo "second: $1"', 'sh', '$(y) ;z'] },
      ...Array.from({ length: 5 }, () => ({ argv: ['true'] })),
    ];
    const jobs = await manager.submitMany(specs, { profile: 'hpc' });
    // One remote command submitted all eight (the others were the probe's): the submit
    // script's arguments are the bin directory, the number of jobs and their payload bytes.
    expect(
      transport.commands.filter(
        (args) => /^\d+$/.test(args[1] ?? '') && /^\d+$/.test(args[2] ?? ''),
      ),
    ).toEqual([expect.arrayContaining(['', '8'])]);
    expect(jobs.map((job) => job.state)).toEqual([
      'pending',
      'failed',
      'pending',
      'pending',
      'pending',
      'pending',
      'pending',
      'pending',
    ]);
    expect(jobs[1]).toMatchObject({
      reason: 'submit-refused',
      failureKind: 'submission',
      error: { code: 'E_SUBMIT_REFUSED', message: expect.stringMatching(/invalid partition/i) },
    });
    const ids = jobs.filter((job) => job.state === 'pending').map((job) => job.id);
    const { jobs: done } = await manager.wait(ids, { timeoutMs: 90_000 });
    expect(done.every((job) => job.state === 'succeeded')).toBe(true);
    expect((await manager.logs(jobs[0]?.id as string)).chunk.data.toString()).toBe(
      `a b|s'$(x)|${JSON.stringify({ k: 'v' }, null, 2)}\n`,
    );
    expect((await manager.logs(jobs[2]?.id as string)).chunk.data.toString()).toBe(
      'second: $(y) ;z\n',
    );
  }, 120_000);

  it('polls many jobs with one squeue and one sacct', async () => {
    const { manager, transport } = slurmManager();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    const jobs = [];
    for (let i = 0; i < 5; i += 1)
      jobs.push(
        await manager.submit({ argv: ['true'], schedulerOptions: ['--hold'] }, { profile: 'hpc' }),
      );
    transport.commands.length = 0;
    await manager.refresh({ force: true });
    const programs = transport.commands.map((args) => args[1]);
    expect(programs).toEqual(['squeue']);
    await manager.cancel(
      jobs.map((job) => job.id),
      { waitMs: 30_000 },
    );
    transport.commands.length = 0;
    await manager.refresh({ force: true });
    expect(transport.commands.filter((args) => args[1] === 'scancel').length).toBeLessThanOrEqual(
      1,
    );
  }, 90_000);

  it('keeps names, paths and arguments with spaces, quotes and $() literal', async () => {
    const { manager } = slurmManager();
    const dir = workdir();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: dir });
    const job = await manager.submit(
      {
        argv: [
          'sh',
          '-c',
          'printf "%s|" "$@"; printf "%s|" "$(pwd)" "$X"',
          'sh',
          "it's",
          '$(touch /tmp/yonder-canary)',
          'a b',
          '-x',
        ],
        name: `my "job" $(x) 'q'`,
        env: { X: "va'l $(ue)" },
        settings: { path: '/a b/c' },
        cwd: '/tmp',
      },
      { profile: 'hpc' },
    );
    const { jobs } = await manager.wait([job.id], { timeoutMs: 90_000 });
    expect(jobs[0]?.state).toBe('succeeded');
    expect((await manager.logs(job.id)).chunk.data.toString()).toBe(
      `it's|$(touch /tmp/yonder-canary)|a b|-x|/tmp|va'l $(ue)|`,
    );
    expect(existsSync('/tmp/yonder-canary')).toBe(false);
    const jobDir = String(jobs[0]?.data.jobDir);
    expect(jobDir.startsWith(dir)).toBe(true);
    expect(statSync(jobDir).mode & 0o777).toBe(0o700);
    expect(statSync(`${jobDir}/settings.json`).mode & 0o777).toBe(0o600);
  }, 120_000);

  it('finds a job whose submit was interrupted by its name, instead of submitting it again', async () => {
    const { manager } = slurmManager();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    // A submit whose answer was lost (a timeout) after Slurm had created the job.
    const live = manager.registry.backend('slurm');
    const original = live.submit;
    let slurmId = '';
    live.submit = async (request, context) => {
      slurmId = (await original.call(live, request, context)).externalId;
      throw new YonderError('E_TIMEOUT', 'sbatch timed out');
    };
    await expect(
      manager.submit({ argv: ['true'], schedulerOptions: ['--hold'] }, { profile: 'hpc' }),
    ).rejects.toThrow(/timed out/);
    live.submit = original;
    const [stuck] = (await manager.store.listJobs({})).jobs;
    expect(stuck).toMatchObject({ state: 'submitting', externalId: null });
    await manager.refresh({ force: true });
    const found = await manager.store.getJob(stuck?.id as string);
    expect(found).toMatchObject({ state: 'pending', externalId: slurmId });
    expect(found?.history.map((step) => step.source)).toContain('recover');
    const [cancelled] = await manager.cancel([found?.id as string], { waitMs: 30_000 });
    expect(cancelled?.state).toBe('cancelled');
  }, 60_000);

  it('a job cancelled while pending leaves no secrets file once it is seen cancelled', async () => {
    const { manager } = slurmManager();
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    const job = await manager.submit(
      { argv: ['true'], secrets: { TOKEN: 'pending-secret' }, schedulerOptions: ['--hold'] },
      { profile: 'hpc' },
    );
    const secrets = `${String(job.data.jobDir)}/secrets.sh`;
    expect(existsSync(secrets)).toBe(true);
    const [cancelled] = await manager.cancel([job.id], { waitMs: 30_000 });
    expect(cancelled?.state).toBe('cancelled');
    await until(() => !existsSync(secrets), 30_000, 'the secrets file to be deleted');
  }, 60_000);

  it('never takes another user’s job of the same name for an interrupted submit', async () => {
    const { attacker } = requireUsers();
    const { manager } = slurmManager({ submitGraceSeconds: 0 });
    await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
    const live = manager.registry.backend('slurm');
    const original = live.submit;
    live.submit = async () => {
      throw new YonderError('E_TIMEOUT', 'sbatch timed out');
    };
    await expect(
      manager.submit({ argv: ['true'], name: 'victim-job' }, { profile: 'hpc' }),
    ).rejects.toThrow(/timed out/);
    live.submit = original;
    const [stuck] = (await manager.store.listJobs({})).jobs;
    expect(stuck).toMatchObject({ state: 'submitting', externalId: null });
    // The name shows in every user's `ps` while sbatch runs: another user submits a job by it.
    const theirs = asUser(attacker, [
      'sbatch',
      '--parsable',
      '--hold',
      `--job-name=${slurmJobName(stuck?.id as string, 'victim-job')}`,
      '--chdir=/tmp',
      '--output=/dev/null',
      '--wrap=true',
    ]).trim();
    try {
      await manager.refresh({ force: true });
      const after = await manager.store.getJob(stuck?.id as string);
      expect(after?.externalId).not.toBe(theirs.split(';')[0]);
      expect(after).toMatchObject({ state: 'failed', reason: 'submit-interrupted' });
    } finally {
      spawnSync('scancel', [theirs.split(';')[0] as string]);
    }
  }, 60_000);

  it('leaves an interrupted submit that Slurm never saw alone until the submit grace has passed', async () => {
    /** Submit once with sbatch never reached (the answer lost before it ran), then recover. */
    const interruptedThenRecovered = async (manager: JobManager) => {
      await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
      const live = manager.registry.backend('slurm');
      live.submit = async () => {
        throw new YonderError('E_TIMEOUT', 'sbatch timed out');
      };
      await expect(manager.submit({ argv: ['true'] }, { profile: 'hpc' })).rejects.toThrow(
        /timed out/,
      );
      const [stuck] = (await manager.store.listJobs({})).jobs;
      expect(stuck).toMatchObject({ state: 'submitting', externalId: null });
      await manager.refresh({ force: true });
      return manager.store.getJob(stuck?.id as string);
    };
    const patient = slurmManager();
    expect(patient.manager.registry.backend('slurm').capabilities.submitGraceSeconds).toBe(200);
    // Within the default grace the submit may still be in flight: it stays submitting.
    expect(await interruptedThenRecovered(patient.manager)).toMatchObject({
      state: 'submitting',
    });
    const hasty = slurmManager({ submitGraceSeconds: 0 });
    expect(hasty.manager.registry.backend('slurm').capabilities.submitGraceSeconds).toBe(0);
    // Past the grace, neither squeue nor sacct knowing the name means it was never submitted.
    const given = await interruptedThenRecovered(hasty.manager);
    expect(given).toMatchObject({ state: 'failed', reason: 'submit-interrupted' });
    expect(given?.history.at(-1)?.source).toBe('recover');
  }, 60_000);

  it('a job that exceeds its time limit fails with reason timeout', async () => {
    const { jobs } = await slow.manager.wait([timeoutJob], { timeoutMs: 240_000 });
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      reason: 'timeout',
      failureKind: 'application',
      nativeState: 'TIMEOUT',
    });
  }, 250_000);

  it('resolves a job purged from squeue (MinJobAge) through sacct', async () => {
    const externalId = (await slow.manager.store.getJob(purgedJob))?.externalId as string;
    await untilPurged(externalId, 120_000);
    await slow.manager.refresh({ ids: [purgedJob], force: true });
    const job = await slow.manager.store.getJob(purgedJob);
    expect(job).toMatchObject({ state: 'failed', exitCode: 5 });
    expect(job?.history.at(-1)?.source).toBe('sacct');
  }, 150_000);
});
