/** Tests of watchJobs on the memory store: every kind of event, another manager's changes, the bounded queue and cancellation. */
import { Type } from '@sinclair/typebox';
import { until } from '@yonder/test-helpers';
import { beforeEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../registry/registry.js';
import type {
  BackendJobV1,
  BackendV1,
  CancelOutcomeV1,
  ObservationV1,
  SubmitResultV1,
} from '../spec/backend/v1/backend-v1.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { JobManager } from './job-manager.js';
import { type JobEvent, watchJobs } from './watch-jobs.js';

/** A scheduler the test drives: each job's observation and log size are set by hand. */
class ScriptedBackend implements BackendV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'scripted';
  readonly capabilities = {
    resources: [] as const,
    schedulerOptions: false,
    host: 'optional' as const,
    recoverSubmit: false,
    logs: true,
  };
  readonly optionsSchema = Type.Object({}, { additionalProperties: false });
  next = 1;
  polls: string[][] = [];
  states = new Map<string, ObservationV1>();
  logs = new Map<string, number>();
  validateProfile() {
    return [];
  }
  targetKey(profile: { host?: string }) {
    return `scripted:${profile.host ?? 'here'}`;
  }
  async probe() {
    return { ok: true, facts: {}, problems: [] };
  }
  async submit(): Promise<SubmitResultV1> {
    return { externalId: String(this.next++), state: 'pending', nativeState: 'PENDING', data: {} };
  }
  async poll(jobs: readonly BackendJobV1[]) {
    this.polls.push(jobs.map((job) => job.id));
    const pending: ObservationV1 = {
      kind: 'found',
      state: 'pending',
      nativeState: 'PENDING',
      source: 'queue',
    };
    return new Map(jobs.map((job) => [job.id, this.states.get(job.id) ?? pending] as const));
  }
  async cancel(jobs: readonly BackendJobV1[]) {
    return new Map<string, CancelOutcomeV1>(jobs.map((job) => [job.id, { kind: 'sent' }]));
  }
  async readLog(job: BackendJobV1) {
    const size = this.logs.get(job.id) ?? 0;
    return { exists: size > 0, data: Buffer.alloc(0), start: size, offset: size, size };
  }
}

let backend: ScriptedBackend;
let store: StoreV1;
const manager = () =>
  new JobManager({
    store,
    registry: createRegistry({
      backends: [backend],
      transports: { local: () => createLocalTransport(), ssh: () => createLocalTransport() },
    }),
    stateDirectory: '/tmp',
    minPollIntervalMs: 0,
  });
const running: ObservationV1 = {
  kind: 'found',
  state: 'running',
  nativeState: 'RUNNING',
  source: 'queue',
};
const succeeded: ObservationV1 = {
  kind: 'found',
  state: 'succeeded',
  nativeState: 'COMPLETED',
  exitCode: 0,
  source: 'queue',
};

/** Collect a watch's events into an array as they arrive. */
function collect(watch: AsyncIterable<JobEvent>): JobEvent[] {
  const events: JobEvent[] = [];
  void (async () => {
    for await (const event of watch) events.push(event);
  })();
  return events;
}

beforeEach(async () => {
  backend = new ScriptedBackend();
  store = createMemoryStore();
  await store.saveProfile({ name: 'q', backend: 'scripted', pollSeconds: 1 });
});

describe('watchJobs', () => {
  it('reports jobs created, states changed and records updated, by this manager or another', async () => {
    const watcher = manager();
    const other = manager();
    const before = await other.submit({ argv: ['old'] }, { profile: 'q' });
    const controller = new AbortController();
    const watch = watchJobs(watcher, { signal: controller.signal, intervalMs: 20 });
    await watch.ready;
    const events = collect(watch);
    const job = await other.submit({ argv: ['new'] }, { profile: 'q' });
    await until(() => events.some((e) => e.type === 'created'), 5000, 'the created event');
    expect(events.filter((e) => e.type === 'created').map((e) => 'job' in e && e.job.id)).toEqual([
      job.id,
    ]);
    backend.states.set(job.id, running);
    await until(
      () => events.some((e) => e.type === 'state-changed' && e.job.id === job.id),
      5000,
      'running reported',
    );
    const change = events.find((e) => e.type === 'state-changed');
    expect(change).toMatchObject({ from: 'pending', job: { id: job.id, state: 'running' } });
    // Which fields changed: the state and what came with it, not the ledger's bookkeeping.
    expect(change && 'changed' in change && change.changed).toEqual(
      expect.arrayContaining(['state', 'nativeState', 'history']),
    );
    expect(change && 'changed' in change && change.changed).not.toContain('revision');
    expect(change && 'changed' in change && change.changed).not.toContain('updatedAt');
    expect(change && 'changed' in change && change.changed).not.toContain('spec');
    // The watcher's refreshes polled both active jobs of the target, together.
    expect(backend.polls.some((ids) => ids.includes(before.id) && ids.includes(job.id))).toBe(true);
    await other.cancel([before.id]);
    await until(
      () => events.some((e) => e.type === 'updated' && e.job.id === before.id && e.job.cancel),
      5000,
      'the cancel request reported',
    );
    const update = events.find(
      (e) => e.type === 'updated' && e.job.id === before.id && e.job.cancel !== null,
    );
    expect(update && 'changed' in update && update.changed).toContain('cancel');
    expect(update && 'changed' in update && update.changed).not.toContain('state');
    controller.abort();
  });

  it('finds every job of a burst larger than its window, each once', async () => {
    const watch = watchJobs(manager(), { intervalMs: 20, recentWindow: 2, refresh: false });
    await watch.ready;
    const events = collect(watch);
    const jobs = await manager().submitMany(
      Array.from({ length: 11 }, (_, index) => ({ argv: [`j${index}`] })),
      { profile: 'q' },
    );
    await until(
      () => events.filter((e) => e.type === 'created').length === 11,
      5000,
      '11 created events',
    );
    const ids = events.flatMap((e) => (e.type === 'created' ? [e.job.id] : []));
    expect(new Set(ids)).toEqual(new Set(jobs.map((job) => job.id)));
    watch.close();
  });

  it('reports a failed poll per target, keeps the state, and the recovery as an update', async () => {
    const submitter = manager();
    const job = await submitter.submit({ argv: ['a'] }, { profile: 'q' });
    backend.states.set(job.id, {
      kind: 'query-failed',
      source: 'queue',
      error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'squeue: timed out' },
    });
    const watch = watchJobs(manager(), { intervalMs: 20 });
    await watch.ready;
    const events = collect(watch);
    await until(() => events.some((e) => e.type === 'poll-failed'), 5000, 'poll-failed');
    expect(events.find((e) => e.type === 'poll-failed')).toMatchObject({
      target: 'scripted:here',
      backend: 'scripted',
      jobIds: [job.id],
      error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'squeue: timed out' },
    });
    expect((await store.getJob(job.id))?.state).toBe('pending');
    backend.states.delete(job.id);
    await until(
      () => events.some((e) => e.type === 'updated' && e.job.error === null),
      5000,
      'the error cleared',
    );
    expect(events.filter((e) => e.type === 'poll-failed')).toHaveLength(1);
    watch.close();
  });

  it('refreshes each target no more often than its profile asks', async () => {
    await store.saveProfile({ name: 'slow', backend: 'scripted', host: 'far', pollSeconds: 60 });
    const job = await manager().submit({ argv: ['a'] }, { profile: 'slow' });
    let reads = 0;
    const listing = store.listJobs.bind(store);
    store.listJobs = (options) => {
      if (options?.activeOnly) reads += 1;
      return listing(options);
    };
    const watch = watchJobs(manager(), { intervalMs: 10 });
    await watch.ready;
    // Many rounds of reading the ledger go by; the slow target was polled once, on the first.
    await until(() => reads >= 20, 10_000, 'twenty rounds');
    expect(backend.polls.filter((ids) => ids.includes(job.id))).toHaveLength(1);
    watch.close();
  });

  it('reports log growth by size for running jobs when asked', async () => {
    const job = await manager().submit({ argv: ['a'] }, { profile: 'q' });
    backend.states.set(job.id, running);
    await manager().refresh({ force: true });
    backend.logs.set(job.id, 10);
    const watch = watchJobs(manager(), { intervalMs: 20, logSizes: true });
    await watch.ready;
    const events = collect(watch);
    backend.logs.set(job.id, 25);
    await until(() => events.some((e) => e.type === 'log-grew'), 5000, 'log-grew');
    expect(events.find((e) => e.type === 'log-grew')).toMatchObject({
      size: 25,
      previousSize: 10,
      job: { id: job.id },
    });
    watch.close();
  });

  it('reports a finished job that another manager removed, however old', async () => {
    const other = manager();
    const old = await other.submit({ argv: ['old'] }, { profile: 'q' });
    backend.states.set(old.id, succeeded);
    await other.refresh({ force: true });
    expect((await store.getJob(old.id))?.state).toBe('succeeded');
    // Newer jobs push it out of the window of recent jobs the watch reads.
    const newer = await other.submitMany([{ argv: ['a'] }, { argv: ['b'] }, { argv: ['c'] }], {
      profile: 'q',
    });
    const watch = watchJobs(manager(), { intervalMs: 20, refresh: false, recentWindow: 1 });
    await watch.ready;
    const events = collect(watch);
    expect(await other.store.removeJob?.(old.id)).toBe(true);
    await until(() => events.some((e) => e.type === 'removed'), 5000, 'removed');
    expect(events.filter((e) => e.type === 'removed')).toEqual([{ type: 'removed', id: old.id }]);
    // Reported once: by the time a later removal is reported, the first was not again.
    const later = (newer[0] as { id: string }).id;
    await other.store.removeJob?.(later);
    await until(() => events.filter((e) => e.type === 'removed').length >= 2, 5000, 'later');
    expect(events.filter((e) => e.type === 'removed')).toEqual([
      { type: 'removed', id: old.id },
      { type: 'removed', id: later },
    ]);
    watch.close();
  });

  it('reads every id of a large ledger only a small share of the time', async () => {
    await manager().submit({ argv: ['a'] }, { profile: 'q' });
    const findJobIds = store.findJobIds.bind(store);
    const listJobs = store.listJobs.bind(store);
    let scans = 0;
    let rounds = 0;
    // Each full read of the ids takes 30 ms, as on a ledger of about 10,000 jobs.
    store.findJobIds = async (prefix) => {
      if (prefix === '') {
        scans += 1;
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      return findJobIds(prefix);
    };
    store.listJobs = async (options) => {
      if (options?.activeOnly) rounds += 1;
      return listJobs(options);
    };
    const watch = watchJobs(manager(), { intervalMs: 5, refresh: false });
    await watch.ready;
    await until(() => rounds >= 40, 60_000, 'forty rounds');
    watch.close();
    expect(scans).toBeGreaterThan(0);
    expect(scans).toBeLessThan(rounds / 2);
  });

  it('reports a followed job that left the ledger as removed', async () => {
    const job = await manager().submit({ argv: ['a'] }, { profile: 'q' });
    const listing = store.listJobs.bind(store);
    const getJob = store.getJob.bind(store);
    const watch = watchJobs(manager(), { intervalMs: 20, refresh: false });
    await watch.ready;
    const events = collect(watch);
    // The record disappears (deleted by hand): the store no longer lists or finds it.
    store.listJobs = async (options) => {
      const result = await listing(options);
      return { ...result, jobs: result.jobs.filter((entry) => entry.id !== job.id) };
    };
    store.getJob = async (id) => (id === job.id ? undefined : getJob(id));
    await until(() => events.some((e) => e.type === 'removed'), 5000, 'removed');
    expect(events.find((e) => e.type === 'removed')).toEqual({ type: 'removed', id: job.id });
    watch.close();
  });

  it('holds a bounded number of events for a slow consumer, then says how many it dropped', async () => {
    const watch = watchJobs(manager(), { intervalMs: 10, bufferSize: 3, refresh: false });
    await watch.ready;
    const jobs = await manager().submitMany(
      Array.from({ length: 8 }, (_, index) => ({ argv: [`j${index}`] })),
      { profile: 'q' },
    );
    // Nobody reads until the watch has seen all eight.
    await until(
      async () => (await store.listJobs({ limit: 8 })).jobs.length === 8,
      5000,
      'the jobs stored',
    );
    const waitedFor = Date.now();
    await until(() => Date.now() - waitedFor > 200, 5000, 'rounds to pass');
    const first = await watch.next();
    expect(first.value).toEqual({ type: 'lagged', dropped: 5 });
    const rest: JobEvent[] = [];
    for (let index = 0; index < 3; index += 1) rest.push((await watch.next()).value as JobEvent);
    const ids = new Set(jobs.map((job) => job.id));
    expect(rest.every((e) => e.type === 'created' && ids.has(e.job.id))).toBe(true);
    expect(new Set(rest.map((e) => e.type === 'created' && e.job.id)).size).toBe(3);
    watch.close();
  });

  it('ends when its signal aborts, releasing a waiting read', async () => {
    const controller = new AbortController();
    const watch = watchJobs(manager(), { signal: controller.signal, intervalMs: 10 });
    await watch.ready;
    const pending = watch.next();
    controller.abort();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(await watch.next()).toEqual({ value: undefined, done: true });
    const already = watchJobs(manager(), { signal: controller.signal });
    expect(await already.next()).toEqual({ value: undefined, done: true });
  });
});
