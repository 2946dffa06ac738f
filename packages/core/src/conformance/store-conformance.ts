import type { JobRecord } from '../spec/job.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import { listedJob } from '../store/listed-job.js';
import { assertionsFor, type Check } from './assertions.js';
import type { TestFunction } from './types.js';

const assertions = assertionsFor('Store');
const check: Check = assertions.check;
const rejects = assertions.rejects;

let counter = 0;

/** A minimal valid job record for store tests. */
export function sampleJob(overrides: Partial<JobRecord> = {}): JobRecord {
  counter += 1;
  const id =
    overrides.id ?? `${Date.now().toString(16).slice(-6)}${counter.toString(16).padStart(6, '0')}`;
  const at = new Date(Date.now() + counter).toISOString();
  return {
    id,
    name: 'sample',
    profile: 'local',
    backend: 'local',
    target: 'local:test',
    state: 'pending',
    nativeState: null,
    exitCode: null,
    signal: null,
    reason: null,
    failureKind: null,
    externalId: '1',
    createdAt: at,
    updatedAt: at,
    submittedAt: at,
    finishedAt: null,
    error: null,
    history: [],
    cancel: null,
    misses: 0,
    pendingSince: null,
    spec: {
      argv: ['true'],
      env: {},
      secretNames: [],
      resources: {},
      schedulerOptions: [],
      cwd: null,
      settingsSha256: null,
    },
    profileSnapshot: { name: 'local', backend: 'local' },
    submitter: null,
    data: {},
    revision: 0,
    ...overrides,
  };
}

export interface StoreConformanceOptions {
  /** Tests of your own, run with a fresh store each. */
  additionalTests?: (test: TestFunction, createStore: () => Promise<StoreV1> | StoreV1) => void;
}

/**
 * The contract every store must keep. `createStore` returns a fresh, empty store per test.
 * Usage: `storeConformance(it, () => createFsStore({ location: mkdtempSync(...) }))`.
 */
export function storeConformance(
  test: TestFunction,
  createStore: () => Promise<StoreV1> | StoreV1,
  options: StoreConformanceOptions = {},
): void {
  const withStore = (fn: (store: StoreV1) => Promise<void>) => async () => {
    const store = await createStore();
    try {
      await fn(store);
    } finally {
      await store.close();
    }
  };

  test(
    'store: declares contract v1',
    withStore(async (store) => {
      check(store.specificationVersion === 'v1', 'specificationVersion must be "v1"');
      check(typeof store.id === 'string' && store.id.length > 0, 'id must be a non-empty string');
    }),
  );

  test(
    'store: profiles round-trip, case-insensitively, and are removed',
    withStore(async (store) => {
      await store.saveProfile({
        name: 'HPC',
        backend: 'slurm',
        workdir: '/scratch/me',
        options: { a: 1 },
      });
      const found = await store.getProfile('hpc');
      check(
        found?.name === 'HPC' && found.workdir === '/scratch/me',
        'getProfile should return the saved profile',
      );
      await store.saveProfile({ name: 'hpc', backend: 'slurm' });
      const { profiles } = await store.listProfiles();
      check(profiles.length === 1, 'saving a profile with the same name (any case) replaces it');
      check(
        (await store.removeProfile('HPC')) === true,
        'removeProfile returns true when it existed',
      );
      check(
        (await store.removeProfile('HPC')) === false,
        'removeProfile returns false the second time',
      );
      check((await store.getProfile('hpc')) === undefined, 'a removed profile is gone');
    }),
  );

  test(
    'store: a create of a profile is refused when one of its name exists; of several at once, exactly one succeeds',
    withStore(async (store) => {
      await store.saveProfile({ name: 'Gpu', backend: 'slurm' }, { create: true });
      await rejects(
        store.saveProfile({ name: 'gpu', backend: 'local' }, { create: true }),
        'E_PROFILE_EXISTS',
        'creating a profile whose name (any case) exists',
      );
      check(
        (await store.getProfile('gpu'))?.backend === 'slurm',
        'a refused create leaves the profile as it was',
      );
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, (_, n) =>
          store.saveProfile(
            { name: n % 2 ? 'Lab' : 'lab', backend: 'slurm', workdir: `/scratch/${n}` },
            { create: true },
          ),
        ),
      );
      const saved = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      check(saved.length === 1, `exactly one of 8 creates at once succeeds, ${saved.length} did`);
      for (const outcome of outcomes)
        if (outcome.status === 'rejected')
          check(
            (outcome.reason as { code?: unknown })?.code === 'E_PROFILE_EXISTS',
            'the others fail with E_PROFILE_EXISTS',
          );
      await store.saveProfile({ name: 'LAB', backend: 'slurm', workdir: '/x' });
      check((await store.getProfile('lab'))?.workdir === '/x', 'a plain save still replaces');
    }),
  );

  test(
    'store: an invalid profile is refused with E_INVALID_PROFILE',
    withStore(async (store) => {
      await rejects(
        store.saveProfile({ name: '-bad\nname', backend: 'slurm' }),
        'E_INVALID_PROFILE',
        'saving an invalid profile',
      );
    }),
  );

  test(
    'store: jobs round-trip; duplicates are refused; prefixes find ids',
    withStore(async (store) => {
      const job = sampleJob({ id: 'abc123000001' });
      await store.createJob(job);
      const read = await store.getJob(job.id);
      check(read?.id === job.id && read.state === 'pending', 'getJob returns the created job');
      await rejects(store.createJob(job), 'E_STORE', 'creating a job twice');
      await store.createJob(sampleJob({ id: 'abc124000002' }));
      check(
        (await store.findJobIds('abc12')).length === 2,
        'findJobIds finds both by a shared prefix',
      );
      check(
        (await store.findJobIds('abc123')).join() === 'abc123000001',
        'findJobIds narrows by a longer prefix',
      );
      check(
        (await store.getJob('ffffffffffff')) === undefined,
        'getJob of an unknown id is undefined',
      );
    }),
  );

  test(
    "store: a job's optional fields round-trip (its parents, `after`)",
    withStore(async (store) => {
      const after = [
        { job: 'abc123000001', when: 'ok' as const },
        { job: 'abc124000002', when: 'notok' as const },
      ];
      const job = sampleJob({ after });
      await store.createJob(job);
      check(
        JSON.stringify((await store.getJob(job.id))?.after) === JSON.stringify(after),
        'getJob returns `after` as created',
      );
      await store.updateJob(job.id, (current) => ({ ...current, state: 'running' }));
      const listed = (await store.listJobs({ activeOnly: true })).jobs.find(
        (found) => found.id === job.id,
      );
      check(
        JSON.stringify(listed?.after) === JSON.stringify(after),
        'an update keeps `after`, and listJobs returns it',
      );
    }),
  );

  test(
    'store: updateJob writes atomically and bumps the revision',
    withStore(async (store) => {
      const job = sampleJob();
      await store.createJob(job);
      const next = await store.updateJob(job.id, (current) => ({ ...current, state: 'running' }));
      check(
        next.revision === job.revision + 1 && next.state === 'running',
        'updateJob returns the written record',
      );
      const same = await store.updateJob(job.id, () => undefined);
      check(same.revision === next.revision, 'a change returning undefined writes nothing');
      await rejects(
        store.updateJob('ffffffffffff', (current) => current),
        'E_NO_SUCH_JOB',
        'updating an unknown job',
      );
    }),
  );

  test(
    'store: concurrent updates never lose each other',
    withStore(async (store) => {
      const job = sampleJob({ data: { count: 0 } });
      await store.createJob(job);
      await Promise.all(
        Array.from({ length: 25 }, () =>
          store.updateJob(job.id, (current) => ({
            ...current,
            data: { count: Number(current.data.count) + 1 },
          })),
        ),
      );
      const final = await store.getJob(job.id);
      check(
        final?.data.count === 25,
        `25 concurrent increments must give 25, got ${String(final?.data.count)}`,
      );
    }),
  );

  test(
    'store: active listing excludes terminal jobs; recent listing is newest first',
    withStore(async (store) => {
      const a = sampleJob({ state: 'running' });
      const b = sampleJob({ state: 'pending' });
      const c = sampleJob({ state: 'pending' });
      for (const job of [a, b, c]) await store.createJob(job);
      await store.updateJob(c.id, (current) => ({ ...current, state: 'succeeded' }));
      const active = await store.listJobs({ activeOnly: true });
      check(
        active.jobs
          .map((j) => j.id)
          .sort()
          .join() === [a.id, b.id].sort().join(),
        'active listing has exactly the non-terminal jobs',
      );
      const recent = await store.listJobs({ limit: 2 });
      check(
        recent.jobs.map((j) => j.id).join() === [c.id, b.id].join(),
        'limit 2 gives the two newest, newest first',
      );
      const all = await store.listJobs({});
      check(all.jobs.length === 3, 'listing everything gives every job');
      await store.updateJob(b.id, (current) => ({ ...current, state: 'running' }));
      check(
        (await store.listJobs({ activeOnly: true })).jobs.length === 2,
        'a job moved from one active state to another is still listed as active, once',
      );
    }),
  );

  test(
    'store: a lease has one holder at a time and records completion',
    withStore(async (store) => {
      const first = await store.tryLease('poll-x', 10_000);
      check(first !== undefined, 'a free lease is taken');
      check(
        (await store.tryLease('poll-x', 10_000)) === undefined,
        'a held lease is not taken twice',
      );
      const waiting = store.waitForLease('poll-x', 5_000);
      await first.release({ completed: true });
      const completedAt = await waiting;
      check(
        typeof completedAt === 'string',
        'waitForLease returns the completion time once released',
      );
      const second = await store.tryLease('poll-x', 10_000);
      check(
        second?.lastCompletedAt === completedAt,
        'the next holder sees the last completion time',
      );
      await second.release();
    }),
  );

  test(
    'store: removeJob forgets a job everywhere; settings are kept beside it until then',
    withStore(async (store) => {
      if (!store.removeJob) return;
      const kept = sampleJob({ state: 'running' });
      const gone = sampleJob({ state: 'running' });
      for (const job of [kept, gone]) await store.createJob(job);
      if (store.saveJobSettings && store.getJobSettings) {
        await store.saveJobSettings(gone.id, '{"a": 1}\n');
        check(
          (await store.getJobSettings(gone.id)) === '{"a": 1}\n',
          'getJobSettings returns the text saved',
        );
        check(
          (await store.getJobSettings(kept.id)) === undefined,
          'a job without settings has none',
        );
      }
      check((await store.removeJob(gone.id)) === true, 'removeJob says the job existed');
      check((await store.getJob(gone.id)) === undefined, 'a removed job is gone');
      check((await store.findJobIds(gone.id)).length === 0, 'a removed job is not found by id');
      for (const listing of [{ activeOnly: true }, { limit: 10 }, {}]) {
        const ids = (await store.listJobs(listing)).jobs.map((job) => job.id);
        check(
          !ids.includes(gone.id) && ids.includes(kept.id),
          `a removed job is not listed (${JSON.stringify(listing)}), the others are`,
        );
      }
      if (store.getJobSettings)
        check(
          (await store.getJobSettings(gone.id)) === undefined,
          'a removed job’s settings go with it',
        );
      check((await store.removeJob(gone.id)) === false, 'removing it again says it was not there');
      await rejects(
        store.updateJob(gone.id, (job) => job),
        'E_NO_SUCH_JOB',
        'a removed job cannot be updated',
      );
    }),
  );

  test(
    'store: listing() gives what listJobs({}) gives, each job as it is now',
    withStore(async (store) => {
      if (!store.listing) return;
      const jobs = [
        sampleJob({ state: 'running' }),
        sampleJob({ state: 'succeeded', exitCode: 0, name: 'tab\tand "quotes" ünï' }),
        sampleJob({ state: 'failed', exitCode: 3, signal: 'SIGKILL' }),
        sampleJob({ state: 'cancelled', createdAt: '2026-01-01T00:00:00.000Z' }),
      ];
      for (const job of jobs) await store.createJob(job);
      const compare = async (what: string, since?: string): Promise<void> => {
        const all = (await store.listJobs({})).jobs.filter(
          (job) => since === undefined || job.createdAt >= since,
        );
        const listing = await store.listing?.(since === undefined ? {} : { since });
        if (!listing) return;
        try {
          check(
            listing.entries.map((entry) => entry.id).join() === all.map((job) => job.id).join(),
            `listing() has listJobs' jobs in listJobs' order (${what})`,
          );
          listing.entries.forEach((entry, n) => {
            const job = all[n] as JobRecord;
            const text = new TextDecoder().decode(entry.json());
            check(
              text === JSON.stringify(listedJob(job)),
              `an entry's json() is listedJob's (${what})`,
            );
            check(
              entry.name === job.name &&
                entry.state === job.state &&
                entry.exitCode === job.exitCode &&
                entry.signal === job.signal &&
                entry.profile === job.profile &&
                entry.createdAt === job.createdAt,
              `an entry's fields are its record's (${what})`,
            );
          });
        } finally {
          listing.close();
        }
      };
      await compare('new');
      await compare('again');
      await store.updateJob((jobs[1] as JobRecord).id, (job) => ({ ...job, name: 'renamed' }));
      await store.removeJob?.((jobs[2] as JobRecord).id);
      await compare('after an update and a removal');
      await compare('since', '2026-06-01T00:00:00.000Z');
    }),
  );

  options.additionalTests?.(test, createStore);
}
