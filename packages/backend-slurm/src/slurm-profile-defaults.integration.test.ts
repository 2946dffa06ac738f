import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireCluster, slurmManager, workdir } from './test-support/cluster.js';
import { heldJob, releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';

// Issue 24 item 29: a profile whose default options every submit refuses does not pass profile check.
beforeAll(() => requireCluster());
afterEach(() => releaseHeldJobs());

describe('profile check tries the profile’s defaults', () => {
  it('names a default option yonder refuses before submission, and one Slurm refuses; passes good defaults; creates no job', async () => {
    const { manager, shims } = await shimmedSlurm();
    const save = (name: string, defaults: object) =>
      manager.saveProfile({
        name,
        backend: 'slurm',
        workdir: workdir(),
        options: { binDir: shims.binDir },
        defaults,
      });
    await save('array', { schedulerOptions: ['--nice=5', '--array=1-3'] });
    await save('partition', {
      resources: { partition: 'nosuch' },
      schedulerOptions: ["--mail-user=it's $(x)"],
    });
    await save('good', {
      resources: { partition: 'short', time: '1' },
      schedulerOptions: ['--nice=5'],
    });
    const array = await manager.checkProfile('array');
    expect(array.probe).toMatchObject({
      ok: false,
      problems: [
        expect.stringMatching(
          /^defaults\.schedulerOptions\.1: "--array=1-3" is refused: .*; every submit through this profile would be refused$/,
        ),
      ],
    });
    const partition = await manager.checkProfile('partition');
    expect(partition.probe).toMatchObject({
      ok: false,
      problems: [
        expect.stringMatching(
          /^sbatch refuses the profile's defaults \(--partition=nosuch --mail-user=it's \$\(x\)\), so every submit through it would be refused: .*invalid partition/is,
        ),
      ],
    });
    const good = await manager.checkProfile('good');
    expect(good.probe).toMatchObject({ ok: true, problems: [] });
    // And a submit through the refused profile is the user's refusal, before anything is sent.
    await expect(manager.submit({ argv: ['true'] }, { profile: 'array' })).rejects.toMatchObject({
      code: 'E_INVALID_JOB_SPEC',
    });
    const { jobs } = await manager.store.listJobs({});
    expect(jobs).toEqual([
      expect.objectContaining({
        state: 'failed',
        reason: 'submit-refused',
        failureKind: 'submission',
      }),
    ]);
    // sbatch --test-only (which makes no job) tried the defaults Slurm had to judge.
    expect(shims.calls('sbatch').filter((args) => args.includes('--test-only'))).toHaveLength(2);
  }, 120_000);

  it('a job is still submitted through a profile whose defaults pass', async () => {
    const { manager } = slurmManager();
    await manager.saveProfile({
      name: 'hpc',
      backend: 'slurm',
      workdir: workdir(),
      defaults: { schedulerOptions: ['--hold'] },
    });
    expect((await manager.checkProfile('hpc')).probe).toMatchObject({ ok: true });
    const { job } = await heldJob(manager);
    expect(job).toMatchObject({ state: 'pending' });
  }, 60_000);
});
