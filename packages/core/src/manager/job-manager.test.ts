import { Type } from '@sinclair/typebox';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { YonderError } from '../errors/yonder-error.js';
import { createRegistry } from '../registry/registry.js';
import { sliceLog } from '../remote/slice-log.js';
import type {
  BackendJobV1,
  BackendV1,
  CancelOutcomeV1,
  ObservationV1,
  ReadLogOptionsV1,
  SubmitRequestV1,
  SubmitResultV1,
} from '../spec/backend/v1/backend-v1.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { JobManager, type JobManagerOptions } from './job-manager.js';

/** A scripted scheduler: the runtime side of the contract, driven by the test. */
class ScriptedBackend implements BackendV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'scripted';
  readonly capabilities = {
    resources: ['cpus'] as const,
    schedulerOptions: true,
    host: 'optional' as const,
    recoverSubmit: true,
    logs: true,
  };
  readonly optionsSchema = Type.Object(
    { flavour: Type.Optional(Type.String()) },
    { additionalProperties: false },
  );
  next = 1;
  polls: string[][] = [];
  cancels: Array<{ ids: string[]; force: boolean }> = [];
  submitError: YonderError | null = null;
  recoverable = new Map<string, SubmitResultV1 | null>();
  observe: (job: BackendJobV1) => ObservationV1 = () => ({
    kind: 'found',
    state: 'pending',
    nativeState: 'PENDING',
    source: 'queue',
  });
  pollDelayMs = 0;
  validateProfile() {
    return [];
  }
  targetKey(profile: { host?: string }) {
    return `scripted:${profile.host ?? 'here'}`;
  }
  async probe() {
    return { ok: true, facts: { scripted: true }, problems: [] };
  }
  async submit(request: SubmitRequestV1): Promise<SubmitResultV1> {
    if (this.submitError) throw this.submitError;
    return {
      externalId: String(this.next++),
      state: 'pending',
      nativeState: 'PENDING',
      data: { marker: request.marker },
    };
  }
  async recover(requests: readonly SubmitRequestV1[]) {
    return new Map(
      requests.map((request) => [request.id, this.recoverable.get(request.id) ?? null] as const),
    );
  }
  async poll(jobs: readonly BackendJobV1[]) {
    this.polls.push(jobs.map((job) => job.id));
    if (this.pollDelayMs) await new Promise((resolve) => setTimeout(resolve, this.pollDelayMs));
    return new Map(jobs.map((job) => [job.id, this.observe(job)] as const));
  }
  async cancel(jobs: readonly BackendJobV1[], _context: unknown, options: { force: boolean }) {
    this.cancels.push({ ids: jobs.map((job) => job.id), force: options.force });
    return new Map<string, CancelOutcomeV1>(jobs.map((job) => [job.id, { kind: 'sent' }]));
  }
  async readLog(_job: BackendJobV1, options: ReadLogOptionsV1) {
    return sliceLog(Buffer.from('log\n'), options);
  }
}

let backend: ScriptedBackend;
let store: StoreV1;
let now: Date;
const makeManager = (extra: Partial<JobManagerOptions> = {}) =>
  new JobManager({
    store,
    registry: createRegistry({
      backends: [backend],
      transports: { local: () => createLocalTransport(), ssh: () => createLocalTransport() },
    }),
    stateDirectory: '/tmp',
    now: () => now,
    minPollIntervalMs: 0,
    ...extra,
  });

/** Pauses that take no time: each is recorded and moves the injected clock on by its length. */
let pauses: number[];
const instantSleep = async (ms: number) => {
  pauses.push(ms);
  now = new Date(now.getTime() + ms);
};

beforeEach(async () => {
  backend = new ScriptedBackend();
  store = createMemoryStore();
  now = new Date('2026-01-01T00:00:00Z');
  pauses = [];
  await store.saveProfile({ name: 'q', backend: 'scripted' });
  await store.saveProfile({ name: 'other', backend: 'scripted', host: 'elsewhere' });
});

describe('JobManager', () => {
  it('submits, records the transition, and polls all jobs of a target in one call', async () => {
    const manager = makeManager();
    const a = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    const b = await manager.submit({ argv: ['b'] }, { profile: 'q' });
    const c = await manager.submit({ argv: ['c'] }, { profile: 'other' });
    expect(a.state).toBe('pending');
    expect(a.history.map((step) => step.to)).toEqual(['submitting', 'pending']);
    await manager.refresh();
    expect(backend.polls.map((ids) => ids.sort())).toEqual(
      expect.arrayContaining([[a.id, b.id].sort(), [c.id]]),
    );
    expect(backend.polls).toHaveLength(2);
  });

  it('a failed query changes no state; the error is kept until a healthy poll', async () => {
    const manager = makeManager();
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    backend.observe = () => ({
      kind: 'query-failed',
      source: 'queue',
      error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'down' },
    });
    await manager.refresh();
    let stored = await store.getJob(job.id);
    expect(stored).toMatchObject({ state: 'pending', error: { code: 'E_SCHEDULER_UNAVAILABLE' } });
    backend.poll = async () => {
      throw new Error('connection reset');
    };
    await manager.refresh();
    stored = await store.getJob(job.id);
    expect(stored?.state).toBe('pending');
    expect(stored?.error?.message).toMatch(/connection reset/);
  });

  it('absent for a bounded number of healthy polls, then lost', async () => {
    const manager = makeManager();
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    backend.observe = () => ({ kind: 'absent', source: 'queue' });
    await manager.refresh();
    await manager.refresh();
    expect((await store.getJob(job.id))?.state).toBe('pending');
    await manager.refresh();
    expect(await store.getJob(job.id)).toMatchObject({
      state: 'failed',
      reason: 'lost',
      failureKind: 'infrastructure',
    });
  });

  it('remembers a cancel, repeats it each refresh, forces it after the grace period, and keeps the user intent', async () => {
    const manager = makeManager();
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    backend.observe = () => ({
      kind: 'found',
      state: 'running',
      nativeState: 'RUNNING',
      source: 'queue',
    });
    await manager.cancel([job.id]);
    expect(backend.cancels[0]).toEqual({ ids: [job.id], force: false });
    now = new Date(now.getTime() + 11_000);
    await manager.refresh();
    expect(backend.cancels.at(-1)).toEqual({ ids: [job.id], force: true });
    backend.observe = () => ({
      kind: 'found',
      state: 'succeeded',
      nativeState: 'COMPLETED',
      exitCode: 0,
      source: 'queue',
    });
    await manager.refresh();
    expect(await store.getJob(job.id)).toMatchObject({ state: 'cancelled' });
  });

  it('fails a job pending past the profile timeout, cancelling it with that reason', async () => {
    await store.saveProfile({ name: 'q', backend: 'scripted', pendingTimeoutSeconds: 60 });
    const manager = makeManager();
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    await manager.refresh();
    expect(backend.cancels).toHaveLength(0);
    now = new Date(now.getTime() + 61_000);
    await manager.refresh();
    expect(backend.cancels).toEqual([{ ids: [job.id], force: false }]);
    backend.observe = () => ({
      kind: 'found',
      state: 'cancelled',
      nativeState: 'CANCELLED by 0',
      source: 'sacct',
    });
    await manager.refresh();
    expect(await store.getJob(job.id)).toMatchObject({
      state: 'failed',
      reason: 'pending-timeout',
      failureKind: 'infrastructure',
    });
  });

  it('a refused submit is recorded as failed with the error, and thrown', async () => {
    const manager = makeManager();
    backend.submitError = new YonderError('E_SUBMIT_FAILED', 'invalid partition specified: nosuch');
    await expect(manager.submit({ argv: ['a'] }, { profile: 'q' })).rejects.toThrow(
      /invalid partition/,
    );
    const { jobs } = await store.listJobs({});
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      reason: 'submit-failed',
      error: { code: 'E_SUBMIT_FAILED' },
    });
  });

  it('a spec the backend refuses before sending it is the submitter’s refusal, not an infrastructure failure', async () => {
    const manager = makeManager();
    backend.submitError = new YonderError(
      'E_INVALID_JOB_SPEC',
      'sbatch cannot be given these options',
    );
    await expect(manager.submit({ argv: ['a'] }, { profile: 'q' })).rejects.toMatchObject({
      code: 'E_INVALID_JOB_SPEC',
    });
    const { jobs } = await store.listJobs({});
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      reason: 'submit-refused',
      failureKind: 'submission',
    });
  });

  it('a submit whose outcome is unknown is looked up by its marker, never resubmitted', async () => {
    const manager = makeManager();
    backend.submitError = new YonderError('E_TIMEOUT', 'sbatch timed out');
    await expect(manager.submit({ argv: ['a'] }, { profile: 'q' })).rejects.toThrow(/timed out/);
    const [pending] = (await store.listJobs({})).jobs;
    expect(pending?.state).toBe('submitting');
    backend.recoverable.set(pending!.id, { externalId: '77', state: 'pending', data: {} });
    await manager.refresh();
    expect(await store.getJob(pending!.id)).toMatchObject({ state: 'pending', externalId: '77' });
    expect(backend.next).toBe(1);
  });

  it('an interrupted submit the target never saw is failed as submit-interrupted', async () => {
    const manager = makeManager();
    backend.submitError = new YonderError('E_TRANSPORT', 'connection lost');
    await expect(manager.submit({ argv: ['a'] }, { profile: 'q' })).rejects.toThrow();
    await manager.refresh();
    const [job] = (await store.listJobs({})).jobs;
    expect(job).toMatchObject({ state: 'failed', reason: 'submit-interrupted' });
  });

  it('two managers refreshing at once share one poll', async () => {
    const first = makeManager();
    const second = makeManager();
    await first.submit({ argv: ['a'] }, { profile: 'q' });
    backend.pollDelayMs = 100;
    await Promise.all([first.refresh(), second.refresh()]);
    expect(backend.polls).toHaveLength(1);
  });

  it('a shared poll stamped in the future (a process whose clock ran ahead) answers for no one', async () => {
    const manager = makeManager();
    await manager.submit({ argv: ['a'] }, { profile: 'q' });
    await manager.refresh();
    expect(backend.polls).toHaveLength(1);
    // Every mark as a process a day ahead would have written it.
    const tryLease = store.tryLease.bind(store);
    store.tryLease = async (key, ttlMs) => {
      const lease = await tryLease(key, ttlMs);
      if (!lease?.lastCompletedAt) return lease;
      const ahead = new Date(Date.parse(lease.lastCompletedAt) + 86_400_000).toISOString();
      return { ...lease, lastCompletedAt: ahead };
    };
    await manager.refresh();
    expect(backend.polls).toHaveLength(2);
  });

  it('refuses unsupported resources and scheduler options only when the backend lacks them', async () => {
    const manager = makeManager();
    await expect(
      manager.submit({ argv: ['a'], resources: { gpus: 1 } }, { profile: 'q' }),
    ).rejects.toMatchObject({
      code: 'E_INVALID_JOB_SPEC',
    });
    await expect(
      manager.submit(
        { argv: ['a'], resources: { cpus: 2 }, schedulerOptions: ['--x'] },
        { profile: 'q' },
      ),
    ).resolves.toBeTruthy();
  });

  it('resolves prefixes, refuses ambiguous ones and non-ids', async () => {
    const manager = makeManager();
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    expect((await manager.resolve(job.id.slice(0, 6))).id).toBe(job.id);
    await expect(manager.resolve('zz')).rejects.toMatchObject({ code: 'E_NO_SUCH_JOB' });
    await expect(manager.resolve('../x')).rejects.toMatchObject({ code: 'E_NO_SUCH_JOB' });
    // 40 more ids over 16 possible first digits: some first digit is shared.
    const counts = new Map<string, number>();
    for (let i = 0; i < 40; i += 1) {
      const first = (await manager.submit({ argv: ['a'] }, { profile: 'q' })).id[0] as string;
      counts.set(first, (counts.get(first) ?? 0) + 1);
    }
    const shared = [...counts.entries()].find(([, count]) => count > 1)?.[0] as string;
    await expect(manager.resolve(shared)).rejects.toMatchObject({ code: 'E_AMBIGUOUS_JOB' });
  });

  it('validates profiles against common fields, the backend schema and host needs', async () => {
    const manager = makeManager();
    const issues = await manager.validateProfile({
      name: 'x',
      backend: 'scripted',
      options: { flavour: 3, extra: true },
    });
    expect(issues.map((issue) => issue.path)).toEqual(
      expect.arrayContaining(['options.flavour', 'options.extra']),
    );
    await expect(manager.saveProfile({ name: 'x', backend: 'nope' })).rejects.toMatchObject({
      code: 'E_INVALID_PROFILE',
      message: expect.stringContaining('No backend named "nope"'),
    });
    await expect(manager.profile('missing')).rejects.toMatchObject({ code: 'E_NO_SUCH_PROFILE' });
    expect((await manager.profile('local')).backend).toBe('local');
  });
});

describe('JobManager.list pages and filters', () => {
  it('filters by state, profile, creation time and a predicate, then pages newest first with the total', async () => {
    const manager = makeManager();
    await manager.submitMany(
      Array.from({ length: 7 }, (_, index) => ({ argv: ['a'], name: `job-${index}` })),
      { profile: 'q' },
    );
    const all = await manager.list({ all: true, refresh: false });
    expect(all.total).toBe(7);
    // The ledger's order: newest first, ties by id.
    const newest = all.jobs.map((job) => job.name);
    const page = await manager.list({ all: true, refresh: false, offset: 2, limit: 3 });
    expect(page.total).toBe(7);
    expect(page.jobs.map((job) => job.name)).toEqual(newest.slice(2, 5));
    const last = await manager.list({ all: true, refresh: false, offset: 6, limit: 3 });
    expect(last.jobs.map((job) => job.name)).toEqual(newest.slice(6));
    const odd = await manager.list({
      all: true,
      refresh: false,
      filter: (job) => Number(job.name.slice(4)) % 2 === 1,
      limit: 2,
    });
    expect(odd.total).toBe(3);
    expect(odd.jobs.map((job) => job.name)).toEqual(
      newest.filter((name) => Number(name.slice(4)) % 2 === 1).slice(0, 2),
    );
    const later = await manager.list({
      all: true,
      refresh: false,
      since: new Date(Date.now() + 60_000),
    });
    expect(later).toMatchObject({ jobs: [], total: 0 });
    const byState = await manager.list({
      all: true,
      refresh: false,
      states: ['pending'],
      profile: 'Q',
    });
    expect(byState.total).toBe(7);
    await expect(manager.list({ since: 'yesterday' })).rejects.toThrow(/since must be a time/);
    await expect(manager.list({ limit: -1 })).rejects.toThrow(/limit must be a whole number/);
    await expect(manager.list({ offset: 1.5 })).rejects.toThrow(/offset must be a whole number/);
  });
});

describe('JobManager waits on its injected clock', () => {
  it('wait polls with growing pauses up to the profile poll interval and times out on that clock', async () => {
    await store.saveProfile({ name: 'q', backend: 'scripted', pollSeconds: 3 });
    const manager = makeManager({ sleep: instantSleep });
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    const started = now.getTime();
    const { jobs, timedOut } = await manager.wait([job.id], { timeoutMs: 10_000 });
    expect(timedOut).toBe(true);
    expect(jobs[0]?.state).toBe('pending');
    expect(now.getTime() - started).toBe(10_000);
    expect(pauses.slice(0, 4)).toEqual([200, 300, 450, 675]);
    expect(Math.max(...pauses)).toBe(3000);
    expect(backend.polls).toHaveLength(pauses.length + 1);
  });

  it('wait ends as soon as the job does, reporting each change', async () => {
    const manager = makeManager({ sleep: instantSleep, backoff: { initialMs: 1000, factor: 1 } });
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    const ends = now.getTime() + 2500;
    backend.observe = () =>
      now.getTime() >= ends
        ? { kind: 'found', state: 'succeeded', nativeState: 'DONE', exitCode: 0, source: 'queue' }
        : { kind: 'found', state: 'running', nativeState: 'RUNNING', source: 'queue' };
    const changes: string[] = [];
    const { timedOut } = await manager.wait([job.id], {
      onChange: (changed) => changes.push(changed.state),
    });
    expect(timedOut).toBe(false);
    expect(changes).toEqual(['running', 'succeeded']);
    expect(pauses).toEqual([1000, 1000, 1000]);
  });

  it('cancel waits for the jobs with its own, quicker backoff, bounded by waitMs', async () => {
    const manager = makeManager({ sleep: instantSleep });
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    const [after] = await manager.cancel([job.id], { waitMs: 3000 });
    expect(after?.cancel?.reason).toBe('user');
    expect(pauses).toEqual([100, 200, 400, 800, 1000, 500]);
  });

  it('an aborted wait or follow returns at once, without another poll', async () => {
    const controller = new AbortController();
    const manager = makeManager({
      sleep: (_ms, signal) =>
        new Promise((resolve) =>
          signal?.addEventListener('abort', () => resolve(), { once: true }),
        ),
    });
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    const waiting = manager.wait([job.id], { signal: controller.signal });
    await vi.waitFor(() => expect(backend.polls).toHaveLength(1));
    controller.abort();
    expect((await waiting).timedOut).toBe(true);
    // The log has its first line, then nothing more: follow pauses until the abort.
    let reads = 0;
    backend.readLog = async (_job, options) => {
      reads += 1;
      return sliceLog(Buffer.from('log\n'), options);
    };
    const output: string[] = [];
    const again = new AbortController();
    const polls = backend.polls.length;
    const following = manager.follow(
      job.id,
      (chunk) => {
        output.push(chunk.data.toString());
      },
      {
        signal: again.signal,
      },
    );
    await vi.waitFor(() => expect(reads).toBe(2));
    again.abort();
    const followed = await following;
    expect(followed.job.id).toBe(job.id);
    expect(followed.aborted).toBe(true);
    expect(output).toEqual(['log\n']);
    expect(backend.polls.length - polls).toBe(1);
  });
});

describe('poll sharing never hides a newer state', () => {
  it('a refresh right after another one polls again, and covers every job of the target', async () => {
    // No minPollIntervalMs override: the rule holds with the defaults.
    const manager = new JobManager({
      store,
      registry: createRegistry({ backends: [backend] }),
      stateDirectory: '/tmp',
    });
    const a = await manager.submit({ argv: ['true'] }, { profile: 'q' });
    const b = await manager.submit({ argv: ['sleep', '300'] }, { profile: 'q' });
    backend.observe = (job) =>
      job.id === a.id
        ? { kind: 'found', state: 'running', nativeState: 'RUNNING', source: 'queue' }
        : { kind: 'found', state: 'running', nativeState: 'RUNNING', source: 'queue' };
    await manager.refresh({ ids: [b.id] });
    expect(backend.polls.at(-1)?.sort()).toEqual([a.id, b.id].sort());
    // a ends; the very next status of a must see it, however soon after the last poll.
    backend.observe = (job) =>
      job.id === a.id
        ? {
            kind: 'found',
            state: 'succeeded',
            nativeState: 'COMPLETED',
            exitCode: 0,
            source: 'queue',
          }
        : { kind: 'found', state: 'running', nativeState: 'RUNNING', source: 'queue' };
    const polls = backend.polls.length;
    expect((await manager.status([a.id]))[0]?.state).toBe('succeeded');
    expect(backend.polls.length).toBe(polls + 1);
  });

  it('a job made while another refresh’s poll is in flight is polled by the next refresh', async () => {
    const manager = makeManager();
    const a = await manager.submit({ argv: ['true'] }, { profile: 'q' });
    backend.pollDelayMs = 200;
    let started = (): void => undefined;
    const polling = new Promise<void>((resolve) => {
      started = resolve;
    });
    const poll = backend.poll.bind(backend);
    backend.poll = (jobs) => {
      started();
      return poll(jobs);
    };
    const inFlight = manager.refresh();
    await polling;
    const b = await manager.submit({ argv: ['sleep', '300'] }, { profile: 'q' });
    backend.observe = () => ({
      kind: 'found',
      state: 'running',
      nativeState: 'R',
      source: 'queue',
    });
    const [seen] = await manager.status([b.id]);
    await inFlight;
    expect(backend.polls.at(-2)).toEqual([a.id]);
    expect(backend.polls.at(-1)?.sort()).toEqual([a.id, b.id].sort());
    expect(seen?.state).toBe('running');
  });

  it('refreshes at the same moment share the one poll that completes after they began', async () => {
    const manager = makeManager();
    await manager.submit({ argv: ['true'] }, { profile: 'q' });
    backend.pollDelayMs = 100;
    const polls = backend.polls.length;
    await Promise.all([manager.refresh(), manager.refresh(), manager.refresh()]);
    expect(backend.polls.length).toBe(polls + 1);
  });
});

describe('cancel', () => {
  it('sends one polite request per job, not one more from the refresh that waits for it', async () => {
    const manager = makeManager({ sleep: instantSleep });
    const job = await manager.submit({ argv: ['sleep', '300'] }, { profile: 'q' });
    let cancelled = false;
    backend.observe = () =>
      cancelled
        ? { kind: 'found', state: 'cancelled', nativeState: 'CANCELLED', source: 'queue' }
        : { kind: 'found', state: 'running', nativeState: 'RUNNING', source: 'queue' };
    const cancel = backend.cancel.bind(backend);
    backend.cancel = async (jobs, context, options) => {
      const outcome = await cancel(jobs, context, options);
      // The scheduler takes a few polls to show the job cancelled.
      setTimeout(() => {
        cancelled = true;
      }, 0);
      return outcome;
    };
    await manager.cancel([job.id], { waitMs: 3_000 });
    expect(backend.cancels.filter((call) => call.ids.includes(job.id) && !call.force)).toHaveLength(
      1,
    );
  });
});

describe('wait on a target that cannot be polled', () => {
  it('says since when as the wall time of the first failed poll, and gives up on the wait clock', async () => {
    // The wait's own clock is monotonic (performance.now(), near 0 in a new process); `since`
    // must still be a real date, not that clock's reading printed as 1970.
    const manager = new JobManager({
      store,
      registry: createRegistry({
        backends: [backend],
        transports: { local: () => createLocalTransport(), ssh: () => createLocalTransport() },
      }),
      stateDirectory: '/tmp',
      minPollIntervalMs: 0,
      backoff: { initialMs: 5, maxMs: 10 },
    });
    const job = await manager.submit({ argv: ['a'] }, { profile: 'q' });
    backend.poll = async () => {
      throw new YonderError('E_TRANSPORT', 'connection refused');
    };
    const before = Date.now();
    const reported: string[] = [];
    const result = await manager.wait([job.id], {
      giveUpAfterMs: 50,
      timeoutMs: 30_000,
      onUnreachable: (failure) => reported.push(failure.since),
    });
    expect(result.gaveUp?.error.code).toBe('E_TRANSPORT');
    expect(reported).toHaveLength(1);
    const since = Date.parse(result.gaveUp?.since ?? '');
    expect(since).toBe(Date.parse(reported[0] ?? ''));
    expect(since).toBeGreaterThanOrEqual(before - 1);
    expect(since).toBeLessThanOrEqual(Date.now());
  });
});
