/** When a cancel reached a job (`cancel.reachedAt`), as the state rules weigh it: marked before the send, taken back only on the target's own answer that nothing running was reached. */
import { beforeEach, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../backend/local/local-backend.js';
import { YonderError } from '../errors/yonder-error.js';
import { createRegistry } from '../registry/registry.js';
import type { BackendV1, CancelOutcomeV1, ObservationV1 } from '../spec/backend/v1/backend-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { JobManager } from './job-manager.js';

/** A backend whose cancel answer and poll observation the test sets. */
function scriptedBackend() {
  const script = {
    cancel: (): CancelOutcomeV1 => ({ kind: 'sent' }),
    observation: {
      kind: 'found',
      state: 'running',
      nativeState: 'R',
      source: 'scripted',
    } as ObservationV1,
  };
  // The local backend's contract, with the scheduler's answers scripted.
  const backend: BackendV1 = {
    ...createLocalBackend(),
    submit: async () => ({ externalId: '1', state: 'running', data: {} }),
    poll: async (jobs) => new Map(jobs.map((job) => [job.id, script.observation] as const)),
    cancel: async (jobs) => new Map(jobs.map((job) => [job.id, script.cancel()] as const)),
  };
  return { script, backend };
}

let fake: ReturnType<typeof scriptedBackend>;
let manager: JobManager;

beforeEach(async () => {
  fake = scriptedBackend();
  manager = new JobManager({
    store: createMemoryStore(),
    registry: createRegistry({ backends: [fake.backend] }),
    stateDirectory: '/tmp',
    minPollIntervalMs: 0,
  });
  await manager.saveProfile({ name: 'f', backend: 'local' });
});

const killedByTerm: ObservationV1 = {
  kind: 'found',
  state: 'failed',
  nativeState: 'killed by SIGTERM',
  exitCode: 143,
  signal: 'SIGTERM',
  failureKind: 'application',
  source: 'scripted',
};

describe('cancel.reachedAt', () => {
  it('is marked before the send: a send whose answer is lost still counts as reaching the job', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    fake.script.cancel = () => {
      throw new YonderError('E_TIMEOUT', 'the cancel got no answer');
    };
    await manager.cancel([job.id]);
    const marked = await manager.store.getJob(job.id);
    expect(marked?.cancel?.reachedAt).toEqual(expect.any(String));
    fake.script.observation = killedByTerm;
    await manager.refresh({ force: true });
    expect(await manager.store.getJob(job.id)).toMatchObject({ state: 'cancelled' });
  });

  it.each([
    ['not running', (): CancelOutcomeV1 => ({ kind: 'not-running' })],
    [
      'not to be signalled',
      (): CancelOutcomeV1 => ({
        kind: 'failed',
        error: { code: 'E_CANCEL_FAILED', message: 'no such process' },
      }),
    ],
  ])('is taken back when the target answers that the job was %s', async (_what, answer) => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    fake.script.cancel = answer;
    await manager.cancel([job.id]);
    expect((await manager.store.getJob(job.id))?.cancel?.reachedAt).toBeNull();
    // Whatever killed it, it was not this cancel: the true end wins.
    fake.script.observation = killedByTerm;
    await manager.refresh({ force: true });
    expect(await manager.store.getJob(job.id)).toMatchObject({ state: 'failed', exitCode: 143 });
  });

  it('keeps the first reach: a later repeat does not move it', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    await manager.cancel([job.id]);
    const first = (await manager.store.getJob(job.id))?.cancel?.reachedAt;
    fake.script.cancel = () => ({ kind: 'not-running' });
    await manager.store.updateJob(job.id, (current) =>
      current.cancel
        ? { ...current, cancel: { ...current.cancel, lastSentAt: '2000-01-01T00:00:00.000Z' } }
        : undefined,
    );
    await manager.refresh({ force: true });
    expect((await manager.store.getJob(job.id))?.cancel?.reachedAt).toBe(first);
  });

  it('is not taken back by a racing send that found the job over, once another send reached it', async () => {
    // Two yonder processes cancel at once: one send is still on its way when the other's TERM
    // ends the job; the late one then finds nothing running. The job ended of a cancel.
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const backend = fake.backend as { cancel: BackendV1['cancel'] };
    backend.cancel = async (jobs) => {
      calls += 1;
      if (calls === 1) {
        await held;
        return new Map(jobs.map((one) => [one.id, { kind: 'not-running' }] as const));
      }
      return new Map(jobs.map((one) => [one.id, { kind: 'sent' }] as const));
    };
    const late = manager.cancel([job.id]);
    // The first send is out once its mark is written (the mark comes before the send).
    while (calls === 0) await new Promise((resolve) => setImmediate(resolve));
    await manager.cancel([job.id]);
    expect((await manager.store.getJob(job.id))?.cancel?.confirmedAt).toEqual(expect.any(String));
    release();
    await late;
    expect((await manager.store.getJob(job.id))?.cancel?.reachedAt).toEqual(expect.any(String));
    fake.script.observation = killedByTerm;
    await manager.refresh({ force: true });
    expect(await manager.store.getJob(job.id)).toMatchObject({ state: 'cancelled' });
  });

  it('is not taken back by a send that found the job over while a later send is on its way', async () => {
    // The later send's TERM ended the job before the first one arrived; the first one's
    // "nothing running" is written before the later one's "sent".
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    const gates: Array<() => void> = [];
    const answers: CancelOutcomeV1['kind'][] = ['not-running', 'sent'];
    let calls = 0;
    const backend = fake.backend as { cancel: BackendV1['cancel'] };
    backend.cancel = async (jobs) => {
      const kind = answers[calls] as 'not-running' | 'sent';
      calls += 1;
      await new Promise<void>((resolve) => gates.push(resolve));
      return new Map(jobs.map((one) => [one.id, { kind }] as const));
    };
    const first = manager.cancel([job.id]);
    while (calls < 1) await new Promise((resolve) => setImmediate(resolve));
    // A millisecond on, so the second send is later by the clock.
    const before = Date.now();
    while (Date.now() <= before) await new Promise((resolve) => setTimeout(resolve, 1));
    const second = manager.cancel([job.id]);
    while (calls < 2) await new Promise((resolve) => setImmediate(resolve));
    gates[0]?.();
    await first;
    expect((await manager.store.getJob(job.id))?.cancel?.reachedAt).toEqual(expect.any(String));
    gates[1]?.();
    await second;
    fake.script.observation = killedByTerm;
    await manager.refresh({ force: true });
    expect(await manager.store.getJob(job.id)).toMatchObject({ state: 'cancelled' });
  });
});
