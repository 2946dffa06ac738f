/** Retention on list: a profile's `retentionSeconds` forgets its finished jobs past it (record and files), once an hour per ledger, and keeps a job whose files could not be removed. */
import { beforeEach, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../backend/local/local-backend.js';
import { createRegistry } from '../registry/registry.js';
import type { BackendV1, CleanupOutcomeV1 } from '../spec/backend/v1/backend-v1.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { JobManager } from './job-manager.js';

const DAY = 86_400_000;

let store: StoreV1;
let manager: JobManager;
let cleaned: string[];
let cleanupAnswer: () => CleanupOutcomeV1;

beforeEach(async () => {
  store = createMemoryStore();
  cleaned = [];
  cleanupAnswer = () => ({ kind: 'removed' });
  // The local backend's contract, with a submit that starts nothing and a cleanup the test answers.
  const backend: BackendV1 = {
    ...createLocalBackend(),
    submit: async () => ({ externalId: '1', state: 'running', data: {} }),
    cleanup: async (jobs) => {
      cleaned.push(...jobs.map((job) => job.id));
      return new Map(jobs.map((job) => [job.id, cleanupAnswer()] as const));
    },
  };
  manager = new JobManager({
    store,
    registry: createRegistry({ backends: [backend] }),
    stateDirectory: '/tmp',
    minPollIntervalMs: 0,
  });
  await manager.saveProfile({ name: 'Kept', backend: 'local', retentionSeconds: 30 * 86_400 });
  await manager.saveProfile({ name: 'forever', backend: 'local' });
});

/** A finished job of `profile` that ended `daysAgo` days ago. */
async function endedJob(profile: string, daysAgo: number): Promise<string> {
  const job = await manager.submit({ argv: ['true'] }, { profile });
  const at = new Date(Date.now() - daysAgo * DAY).toISOString();
  await store.updateJob(job.id, (current) => ({ ...current, state: 'succeeded', finishedAt: at }));
  return job.id;
}

const ids = async (): Promise<string[]> =>
  (await store.listJobs({})).jobs.map((job) => job.id).sort();

describe('retention on list', () => {
  it("forgets the profile's finished jobs past its retention, with their files, and nothing else", async () => {
    const old = await endedJob('kept', 31);
    const recent = await endedJob('kept', 29);
    const otherProfile = await endedJob('forever', 400);
    const running = await manager.submit({ argv: ['sleep'] }, { profile: 'kept' });
    await store.updateJob(running.id, (current) => ({
      ...current,
      state: 'running',
      finishedAt: null,
      createdAt: new Date(Date.now() - 90 * DAY).toISOString(),
    }));
    const { problems } = await manager.list();
    expect(problems).toEqual([]);
    expect(cleaned).toEqual([old]);
    expect(await ids()).toEqual([recent, otherProfile, running.id].sort());
  });

  it('sweeps at most once an hour per ledger: a job expiring meanwhile waits for the next sweep', async () => {
    await manager.list();
    const late = await endedJob('kept', 31);
    await manager.list();
    expect(await ids()).toContain(late);
    expect(cleaned).toEqual([]);
  });

  it('keeps, and reports, a job whose files could not be removed; the next sweep tries again', async () => {
    const job = await endedJob('kept', 31);
    cleanupAnswer = () => ({
      kind: 'failed',
      error: { code: 'E_TRANSPORT', message: 'host down' },
    });
    const { problems } = await manager.list();
    expect(problems).toEqual([
      { location: `job ${job}`, message: expect.stringContaining('host down') },
    ]);
    expect(await ids()).toEqual([job]);
  });

  it('does nothing at all while no profile keeps jobs for a limited time', async () => {
    await manager.saveProfile({ name: 'kept', backend: 'local' });
    await endedJob('kept', 3650);
    await manager.list();
    expect(cleaned).toEqual([]);
    expect((await ids()).length).toBe(1);
  });

  it('reports, by id, a job forgotten whose files were not its own to remove', async () => {
    const job = await endedJob('kept', 31);
    cleanupAnswer = () => ({ kind: 'kept', reason: 'a symbolic link, never followed' });
    const { problems } = await manager.list();
    expect(problems).toEqual([
      {
        location: `job ${job}`,
        message: `retention: job ${job} is forgotten, but its files were left: a symbolic link, never followed`,
      },
    ]);
    expect(await ids()).toEqual([]);
  });

  it('leaves the jobs of a profile removed and added again under the same name elsewhere', async () => {
    const job = await endedJob('forever', 400);
    // As a profile of another backend's would be saved (the local one has no hosts).
    await store.saveProfile({
      name: 'forever',
      backend: 'local',
      host: 'elsewhere',
      retentionSeconds: 60,
    });
    await manager.list();
    expect(await ids()).toEqual([job]);
  });

  it('forgets a thousand jobs a sweep, and the next list goes on with the rest', async () => {
    for (let n = 0; n < 1003; n += 1) await endedJob('kept', 31);
    await manager.list();
    expect((await ids()).length).toBe(3);
    await manager.list();
    expect(await ids()).toEqual([]);
  });

  it('never fails the list: a sweep that fails is a warning, tried again next time', async () => {
    const job = await endedJob('kept', 31);
    const listJobs = store.listJobs.bind(store);
    let broken = true;
    store.listJobs = async (options) => {
      if (broken && !options?.activeOnly && options?.limit === undefined)
        throw new Error('EISDIR: illegal operation on a directory');
      return listJobs(options);
    };
    const { problems } = await manager.list({ all: false });
    expect(problems).toEqual([
      { location: store.location, message: expect.stringContaining('EISDIR') },
    ]);
    broken = false;
    await manager.list();
    expect(await ids()).not.toContain(job);
  });
});
