import { until } from '@yonder/test-helpers';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cluster, requireCluster, slurmManager, workdir } from './test-support/cluster.js';

// Stops slurmctld and slurmdbd: run alone (vitest project `disruptive`), never beside other tests.
beforeAll(() => requireCluster());
afterAll(() => {
  cluster('start');
});

it('slurmctld stopped during a poll changes no state; states converge after it restarts', async () => {
  const { manager } = slurmManager();
  await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
  const held = await manager.submit(
    { argv: ['true'], schedulerOptions: ['--hold'] },
    { profile: 'hpc' },
  );
  const running = await manager.submit({ argv: ['sleep', '8'] }, { profile: 'hpc' });
  await manager.refresh({ force: true });
  const before = await Promise.all([held.id, running.id].map((id) => manager.store.getJob(id)));
  cluster('stop-ctld');
  try {
    await manager.refresh({ force: true });
    for (const job of before) {
      const now = await manager.store.getJob(job?.id as string);
      expect(now?.state).toBe(job?.state);
      expect(now?.history).toHaveLength(job?.history.length as number);
      expect(now?.error).toMatchObject({
        code: 'E_SCHEDULER_UNAVAILABLE',
        message: expect.stringContaining('squeue'),
      });
    }
    await expect(manager.submit({ argv: ['true'] }, { profile: 'hpc' })).rejects.toMatchObject({
      code: 'E_SCHEDULER_UNAVAILABLE',
    });
  } finally {
    cluster('start-ctld');
  }
  const { jobs } = await manager.wait([running.id], { timeoutMs: 120_000 });
  expect(jobs[0]).toMatchObject({ state: 'succeeded', error: null });
  const [cancelled] = await manager.cancel([held.id], { waitMs: 60_000 });
  expect(cancelled?.state).toBe('cancelled');
}, 240_000);

it('slurmdbd stopped: a job that ends meanwhile is settled by its exit-code file, never lost', async () => {
  const { manager } = slurmManager();
  await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
  const job = await manager.submit({ argv: ['sh', '-c', 'sleep 2; exit 4'] }, { profile: 'hpc' });
  cluster('stop-dbd');
  try {
    // Polling while accounting is down: once the job has left RUNNING its own file settles it.
    await until(
      async () => {
        const [current] = await manager.status([job.id]);
        expect(current?.reason).not.toBe('lost');
        return current?.state === 'failed';
      },
      60_000,
      'the job is settled',
      250,
    );
    expect(await manager.store.getJob(job.id)).toMatchObject({
      exitCode: 4,
      failureKind: 'application',
    });
  } finally {
    cluster('start-dbd');
  }
  const { jobs } = await manager.wait([job.id], { timeoutMs: 120_000 });
  expect(jobs[0]).toMatchObject({ state: 'failed', exitCode: 4 });
}, 240_000);
