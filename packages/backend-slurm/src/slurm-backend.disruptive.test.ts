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

it('slurmdbd stopped: finished jobs wait for accounting instead of being declared lost', async () => {
  const { manager } = slurmManager();
  await manager.saveProfile({ name: 'hpc', backend: 'slurm', workdir: workdir() });
  const job = await manager.submit({ argv: ['sh', '-c', 'sleep 2; exit 4'] }, { profile: 'hpc' });
  cluster('stop-dbd');
  try {
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    await manager.refresh({ force: true });
    const during = await manager.store.getJob(job.id);
    expect(during?.state).not.toBe('failed');
  } finally {
    cluster('start-dbd');
  }
  const { jobs } = await manager.wait([job.id], { timeoutMs: 120_000 });
  expect(jobs[0]).toMatchObject({ state: 'failed', exitCode: 4 });
}, 240_000);
