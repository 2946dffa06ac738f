import { Type } from '@sinclair/typebox';
import { beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../errors/validation-error.js';
import { createRegistry } from '../registry/registry.js';
import type {
  BackendJobV1,
  BackendV1,
  CancelOutcomeV1,
  ObservationV1,
  SubmitRequestV1,
  SubmitResultV1,
} from '../spec/backend/v1/backend-v1.js';
import type { JobRecord, JobState } from '../spec/job.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { isWaiting, judge } from './dependencies.js';
import { JobManager } from './job-manager.js';

/** A queue whose jobs end as the test says: `ends.set(jobId, state)`; every submit is recorded. */
class ToyQueue implements BackendV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'toy';
  readonly capabilities = {
    resources: [] as const,
    schedulerOptions: false,
    host: 'optional' as const,
    recoverSubmit: false,
    logs: false,
  };
  readonly optionsSchema = Type.Object({}, { additionalProperties: false });
  submitted: SubmitRequestV1[] = [];
  ends = new Map<string, JobState>();
  refuse = new Set<string>();
  validateProfile() {
    return [];
  }
  targetKey(profile: { host?: string }) {
    return `toy:${profile.host ?? 'here'}`;
  }
  async probe() {
    return { ok: true, facts: {}, problems: [] };
  }
  async submit(request: SubmitRequestV1): Promise<SubmitResultV1> {
    if (this.refuse.has(request.name)) throw new Error(`refused ${request.name}`);
    this.submitted.push(request);
    return { externalId: `x${this.submitted.length}`, state: 'pending', data: {} };
  }
  async poll(jobs: readonly BackendJobV1[]) {
    return new Map(
      jobs.map((job): [string, ObservationV1] => {
        const end = this.ends.get(job.id);
        return [
          job.id,
          end
            ? {
                kind: 'found',
                state: end,
                nativeState: end,
                source: 'toy',
                exitCode: end === 'succeeded' ? 0 : end === 'failed' ? 3 : null,
                ...(end === 'cancelled' ? {} : { startedAt: '2026-01-01T00:00:00.000Z' }),
              }
            : { kind: 'found', state: 'pending', nativeState: 'Q', source: 'toy' },
        ];
      }),
    );
  }
  async cancel(jobs: readonly BackendJobV1[]) {
    for (const job of jobs) this.ends.set(job.id, 'cancelled');
    return new Map<string, CancelOutcomeV1>(jobs.map((job) => [job.id, { kind: 'sent' }]));
  }
  async readLog(): Promise<never> {
    throw new Error('no logs');
  }
}

let queue: ToyQueue;
let store: StoreV1;
let manager: JobManager;
const submitted = () => queue.submitted.map((request) => request.name);
const record = async (job: JobRecord) => (await store.getJob(job.id)) as JobRecord;

beforeEach(async () => {
  queue = new ToyQueue();
  store = createMemoryStore();
  await store.saveProfile({ name: 'q', backend: 'toy' });
  await store.saveProfile({ name: 'far', backend: 'toy', host: 'far' });
  manager = new JobManager({
    store,
    registry: createRegistry({ backends: [queue], transports: { local: createLocalTransport } }),
    stateDirectory: '/tmp',
    minPollIntervalMs: 0,
  });
});

describe('dependencies kept by yonder', () => {
  it('holds a dependent in the ledger, then submits it once its parent succeeded', async () => {
    const parent = await manager.submit({ argv: ['p'], name: 'parent' }, { profile: 'q' });
    const child = await manager.submit(
      { argv: ['c'], name: 'child', after: [parent.id.slice(0, 5)] },
      { profile: 'q' },
    );
    expect(child).toMatchObject({ state: 'pending', nativeState: 'waiting', submittedAt: null });
    expect(child.after).toEqual([{ job: parent.id, when: 'ok' }]);
    expect(isWaiting(child)).toBe(true);
    await manager.refresh();
    expect(submitted()).toEqual(['parent']);
    queue.ends.set(parent.id, 'succeeded');
    // Refreshing the child alone refreshes its parent's target too.
    await manager.refresh({ ids: [child.id] });
    expect(submitted()).toEqual(['parent', 'child']);
    const released = await record(child);
    expect(released).toMatchObject({ state: 'pending', nativeState: 'pending', externalId: 'x2' });
    expect(released.history.map((step) => `${step.to}:${step.source}`)).toEqual([
      'submitting:submit',
      'pending:dependencies',
      'submitting:dependencies',
      'pending:submit',
    ]);
  });

  it('settles a dependent failed at once when its parent failed, and its own dependents after it', async () => {
    const [a, b, c, d] = await manager.submitMany(
      [
        { argv: ['a'], name: 'a' },
        { argv: ['b'], name: 'b', after: ['#1'] },
        { argv: ['c'], name: 'c', after: ['#2:ok'] },
        { argv: ['d'], name: 'd', after: ['#2:notok', '#1:any'] },
      ],
      { profile: 'q' },
    );
    queue.ends.set((a as JobRecord).id, 'failed');
    await manager.refresh();
    expect(await record(b as JobRecord)).toMatchObject({
      state: 'failed',
      reason: 'dependency-never-satisfied',
      error: { code: 'E_DEPENDENCY_NEVER_SATISFIED' },
    });
    expect((await record(b as JobRecord)).error?.message).toContain(
      `${(a as JobRecord).id} failed (exit 3)`,
    );
    expect((await record(c as JobRecord)).error?.message).toContain(
      `${(b as JobRecord).id} failed`,
    );
    // d wanted b to fail and a to end: both hold, so it was submitted.
    expect(submitted()).toEqual(['a', 'd']);
    expect((await record(d as JobRecord)).externalId).toBe('x2');
  });

  it('cancelling a parent settles its ok dependents at once; notok ones run after its end', async () => {
    const parent = await manager.submit({ argv: ['p'], name: 'p' }, { profile: 'q' });
    const ok = await manager.submit(
      { argv: ['ok'], name: 'ok', after: [parent.id] },
      { profile: 'q' },
    );
    const notok = await manager.submit(
      { argv: ['n'], name: 'n', after: [`${parent.id}:notok`] },
      { profile: 'q' },
    );
    await manager.cancel([parent.id]);
    expect(await record(ok)).toMatchObject({
      state: 'failed',
      reason: 'dependency-never-satisfied',
    });
    expect((await record(ok)).error?.message).toContain(`${parent.id} was cancelled`);
    await manager.refresh();
    expect((await record(parent)).state).toBe('cancelled');
    expect(submitted()).toEqual(['p', 'n']);
    expect(isWaiting(await record(notok))).toBe(false);
  });

  it('cancels a waiting job at once, sending nothing, and settles what waited for it', async () => {
    const parent = await manager.submit({ argv: ['p'], name: 'p' }, { profile: 'q' });
    const [mid, last] = await manager.submitMany(
      [
        { argv: ['m'], name: 'm', after: [parent.id] },
        { argv: ['l'], name: 'l', after: ['#1:started'] },
      ],
      { profile: 'q' },
    );
    const [cancelled] = await manager.cancel([(mid as JobRecord).id]);
    expect(cancelled).toMatchObject({ state: 'cancelled', reason: 'cancelled-while-waiting' });
    expect((await record(last as JobRecord)).error?.message).toMatch(/without starting/);
    expect(submitted()).toEqual(['p']);
  });

  it('a parent of another profile and target releases its dependent', async () => {
    const parent = await manager.submit({ argv: ['p'], name: 'p' }, { profile: 'far' });
    const child = await manager.submit(
      { argv: ['c'], name: 'c', after: [parent.id] },
      { profile: 'q' },
    );
    queue.ends.set(parent.id, 'succeeded');
    await manager.refresh({ ids: [child.id] });
    expect(submitted()).toEqual(['p', 'c']);
    expect((await record(child)).profile).toBe('q');
  });

  it('a dependent whose backend cannot be had when released waits again, and goes later', async () => {
    let broken = false;
    const flaky = new JobManager({
      store,
      registry: createRegistry({ backends: [queue], transports: { local: createLocalTransport } }),
      // Only the dependent's profile: its parent, on another, is polled as usual.
      resolveBackend: async (_id, profile) => {
        if (broken && profile.name === 'q') throw new Error('plugin gone for a moment');
        return queue;
      },
      stateDirectory: '/tmp',
      minPollIntervalMs: 0,
    });
    const parent = await flaky.submit({ argv: ['p'], name: 'p' }, { profile: 'far' });
    const child = await flaky.submit(
      { argv: ['c'], name: 'c', after: [parent.id] },
      { profile: 'q' },
    );
    queue.ends.set(parent.id, 'succeeded');
    broken = true;
    await flaky.refresh();
    expect((await record(parent)).state).toBe('succeeded');
    const again = await record(child);
    expect(isWaiting(again)).toBe(true);
    expect(again.error?.message).toContain('plugin gone for a moment');
    broken = false;
    await flaky.refresh();
    expect((await record(child)).externalId).toBe('x2');
    expect(submitted()).toEqual(['p', 'c']);
  });

  it('a parent forgotten before it ended settles what waited for it', async () => {
    const parent = await manager.submit({ argv: ['p'], name: 'p' }, { profile: 'q' });
    const child = await manager.submit(
      { argv: ['c'], name: 'c', after: [`${parent.id}:any`] },
      { profile: 'q' },
    );
    queue.cancel = async (jobs) =>
      new Map<string, CancelOutcomeV1>(jobs.map((job) => [job.id, { kind: 'sent' }]));
    const [result] = await manager.forget([parent.id], { force: true, cancelWaitMs: 50 });
    expect(result).toMatchObject({ removed: true, state: 'pending' });
    expect(await record(child)).toMatchObject({
      state: 'failed',
      reason: 'dependency-never-satisfied',
    });
    expect((await record(child)).error?.message).toContain(
      `${parent.id} is no longer in the ledger`,
    );
    expect(submitted()).toEqual(['p']);
  });

  it('refuses bad input before anything is written, naming the field and the fix', async () => {
    const parent = await manager.submit({ argv: ['p'], name: 'p' }, { profile: 'q' });
    queue.ends.set(parent.id, 'failed');
    await manager.refresh();
    const before = (await store.listJobs({})).jobs.length;
    const refused = async (specs: Parameters<JobManager['submitMany']>[0]) => {
      const error = await manager.submitMany(specs, { profile: 'q' }).catch((caught) => caught);
      expect(ValidationError.isInstance(error), JSON.stringify(specs)).toBe(true);
      return (error as ValidationError).issues.map((issue) => `${issue.path}: ${issue.message}`);
    };
    expect(await refused([{ argv: ['x'], after: [parent.id] }])).toEqual([
      expect.stringMatching(
        new RegExp(
          `^jobs\\.0\\.after\\.0: ${parent.id} failed \\(exit 3\\), so "${parent.id}:ok".*can never hold`,
        ),
      ),
    ]);
    expect(await refused([{ argv: ['x'], after: ['#1'] }])).toEqual([
      'jobs.0.after.0: "#1" is this job itself; a job cannot wait for itself',
    ]);
    expect(
      await refused([
        { argv: ['x'], after: ['#3'] },
        { argv: ['y'], after: ['#1:notok'] },
        { argv: ['z'], after: ['#2:any'] },
      ]),
    ).toEqual([expect.stringMatching(/^jobs\.0\.after: #1 → #3 → #2 → #1 is a cycle/)]);
    expect(await refused([{ argv: ['x'], after: ['#9'] }, { argv: ['y'] }])).toEqual([
      'jobs.0.after.0: "#9" is no job of this batch (its jobs are #1, #2)',
    ]);
    const hostile = [
      '',
      ':ok',
      'abc:okay',
      '$(id)',
      'abc;rm -rf /',
      '-abc',
      'ab\ncd',
      'ab\0',
      '#0',
      '#-1',
      'ünï',
      'abc:OK',
      'ffffffffffff',
    ];
    const messages = await refused(hostile.map((text) => ({ argv: ['x'], after: [text] })));
    expect(messages).toHaveLength(hostile.length);
    expect(messages[2]).toContain(
      '"okay" is not a condition; WHEN is ok (the default), notok, any or started',
    );
    expect(messages[6]).toContain('"ab\\ncd"');
    expect(messages[12]).toContain('No job matches "ffffffffffff"');
    expect(
      await refused([{ argv: ['x'], after: [parent.id.slice(0, 8)], secrets: { TOKEN: 's' } }]),
    ).toEqual(
      expect.arrayContaining([expect.stringMatching(/^jobs\.0\.secrets: a job that waits/)]),
    );
    const single = await manager
      .submit({ argv: ['x'], after: ['#1'] }, { profile: 'q' })
      .then(() => null)
      .catch((error) => error as ValidationError);
    if (single === null) throw new Error('submitted');
    expect(single.issues[0]).toMatchObject({ path: 'after.0' });
    expect(single.issues[0]?.message).toMatch(/only a batch line may use #N/);
    expect((await store.listJobs({})).jobs).toHaveLength(before);
  });

  it('resubmit keeps the dependencies, and refuses when a parent can no longer satisfy them', async () => {
    const parent = await manager.submit({ argv: ['p'], name: 'p' }, { profile: 'q' });
    const child = await manager.submit(
      { argv: ['c'], name: 'c', after: [`${parent.id}:any`] },
      { profile: 'q' },
    );
    const again = await manager.resubmit(child.id);
    expect(again.after).toEqual([{ job: parent.id, when: 'any' }]);
    const strict = await manager.submit(
      { argv: ['s'], name: 's', after: [parent.id] },
      { profile: 'q' },
    );
    queue.ends.set(parent.id, 'failed');
    await manager.refresh();
    expect((await record(strict)).state).toBe('failed');
    const error = await manager.resubmit(strict.id).catch((caught) => caught);
    expect(ValidationError.isInstance(error)).toBe(true);
    expect((error as ValidationError).issues[0]?.path).toBe('after.0');
  });

  it('judges each condition on what became of the parent', () => {
    const base = {
      history: [],
      startedAt: null,
      exitCode: null,
      cancel: null,
      failureKind: null,
    } as unknown as JobRecord;
    const as = (state: JobState, extra: Partial<JobRecord> = {}) =>
      ({ ...base, state, ...extra }) as JobRecord;
    const kinds = (parent: JobRecord | null) =>
      (['ok', 'notok', 'any', 'started'] as const).map((when) => judge(when, parent, 'p').kind);
    expect(kinds(as('pending'))).toEqual(['wait', 'wait', 'wait', 'wait']);
    expect(kinds(as('running'))).toEqual(['wait', 'wait', 'wait', 'met']);
    expect(kinds(as('succeeded'))).toEqual(['met', 'never', 'met', 'met']);
    expect(kinds(as('failed', { exitCode: 1 }))).toEqual(['never', 'met', 'met', 'met']);
    expect(kinds(as('failed', { reason: 'submit-failed' }))).toEqual([
      'never',
      'met',
      'met',
      'never',
    ]);
    expect(kinds(as('cancelled'))).toEqual(['never', 'met', 'met', 'never']);
    expect(kinds(null)).toEqual(['never', 'never', 'never', 'never']);
    const stopping = as('running', {
      cancel: { requestedAt: '2026-01-01T00:00:00Z', reason: 'user', lastSentAt: null },
    });
    expect(kinds(stopping)).toEqual(['never', 'wait', 'wait', 'met']);
  });
});
