import { Type } from '@sinclair/typebox';
import { beforeEach, describe, expect, it } from 'vitest';
import { YonderError } from '../errors/yonder-error.js';
import { createRegistry } from '../registry/registry.js';
import { sliceLog } from '../remote/slice-log.js';
import type {
  BackendV1,
  LogChunkV1,
  ObservationV1,
  ReadLogOptionsV1,
} from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { missingLogMessage } from './job-logs.js';
import { JobManager } from './job-manager.js';

/** A backend whose log and state the test sets; it can be made unreachable. */
function fakeBackend() {
  const fake = {
    log: null as Buffer | null,
    state: { kind: 'found', state: 'running', nativeState: 'R', source: 'fake' } as ObservationV1,
    unreachable: false,
    /** Fail every read after this many (to cut a read short midway). */
    failAfter: Number.POSITIVE_INFINITY,
    reads: [] as ReadLogOptionsV1[],
  };
  const backend: BackendV1 = {
    specificationVersion: 'v1',
    id: 'fake',
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'none',
      recoverSubmit: false,
      logs: true,
    },
    optionsSchema: Type.Object({}, { additionalProperties: false }),
    validateProfile: () => [],
    targetKey: () => 'fake',
    probe: async () => ({ ok: true, facts: {}, problems: [] }),
    submit: async () => ({ externalId: '1', state: 'running', data: { log: '/fake/log' } }),
    poll: async (jobs) => new Map(jobs.map((job) => [job.id, fake.state] as const)),
    cancel: async () => new Map(),
    async readLog(_job, options): Promise<LogChunkV1> {
      fake.reads.push(options);
      if (fake.unreachable || fake.reads.length > fake.failAfter)
        throw new YonderError('E_TRANSPORT', 'Cannot connect to fake: refused');
      if (!fake.log)
        return {
          exists: false,
          data: Buffer.alloc(0),
          start: 0,
          offset: 0,
          size: 0,
          message: '/fake/log does not exist',
        };
      return sliceLog(fake.log, options);
    },
  };
  return { fake, backend };
}

let store: StoreV1;
let fake: ReturnType<typeof fakeBackend>['fake'];
let manager: JobManager;

beforeEach(async () => {
  const made = fakeBackend();
  fake = made.fake;
  store = createMemoryStore();
  await store.saveProfile({ name: 'f', backend: 'fake' });
  manager = new JobManager({
    store,
    registry: createRegistry({
      backends: [made.backend],
      transports: { local: () => createLocalTransport() },
    }),
    stateDirectory: '/tmp',
    minPollIntervalMs: 0,
    sleep: async () => {},
  });
});

async function collect(
  read: (write: (chunk: LogChunkV1) => void) => Promise<unknown>,
): Promise<Buffer> {
  const pieces: Buffer[] = [];
  await read((chunk) => {
    pieces.push(Buffer.from(chunk.data));
  });
  return Buffer.concat(pieces);
}

describe('reading a job log through the manager', () => {
  it('reads a tail in one round trip when it lies in the last 64 KiB, and keeps that much', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    fake.log = Buffer.concat([Buffer.alloc(100_000, 0x61), Buffer.from('\none\ntwo\n')]);
    const { chunk } = await manager.logs(job.id, { lines: 2 });
    expect(chunk.data.toString()).toBe('one\ntwo\n');
    expect(fake.reads).toEqual([{ tailBytes: 65_536, maxBytes: 65_536 }]);
    const kept = (await store.getJob(job.id))?.logTail;
    expect(kept).toMatchObject({ start: fake.log.length - 65_536, end: fake.log.length });
    // More lines than the last 64 KiB hold: the backend finds where they start.
    fake.reads = [];
    const { chunk: more } = await manager.logs(job.id, { lines: 3, chunkBytes: 40_000 });
    expect(more.data.equals(fake.log)).toBe(true);
    // The read of the range may stream its pieces (onData); this fake backend does not.
    expect(fake.reads[1]).toEqual({ tailLines: 3, maxBytes: 40_000, onData: expect.any(Function) });
  });

  it('shows the kept tail when the target cannot be reached, and says so', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    fake.log = Buffer.from('a\nb\nc\n');
    await manager.logs(job.id, { lines: 1 });
    fake.unreachable = true;
    const { chunk, result } = await manager.logs(job.id, { lines: 2 });
    expect(chunk.data.toString()).toBe('b\nc\n');
    expect(result.kept).toMatchObject({
      complete: true,
      reason: 'Cannot connect to fake: refused',
    });
    const other = await manager.submit({ argv: ['y'] }, { profile: 'f' });
    await expect(manager.logs(other.id)).rejects.toMatchObject({
      code: 'E_TRANSPORT',
      message: expect.stringContaining('no copy of its end is kept yet'),
    });
  });

  it('a read cut short midway fails; it never writes the kept tail after part of the log', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    fake.log = Buffer.from('0123456789');
    await manager.logs(job.id, { all: true });
    fake.failAfter = fake.reads.length + 2;
    const written: string[] = [];
    await expect(
      manager.streamLogs(job.id, (chunk) => void written.push(chunk.data.toString()), {
        all: true,
        chunkBytes: 2,
      }),
    ).rejects.toMatchObject({ code: 'E_TRANSPORT' });
    // Two chunks read, the third failed: no kept tail written after them.
    expect(written).toEqual(['01', '23']);
  });

  it('follow waits for a log that does not exist yet, then writes all of it', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    const notices: string[] = [];
    const followed = collect((write) =>
      manager.follow(job.id, write, {
        onNotice: (text) => {
          notices.push(text);
          // Told that there is no log yet: the job writes it, and ends.
          fake.log = Buffer.from('x'.repeat(50));
          fake.state = {
            kind: 'found',
            state: 'succeeded',
            nativeState: 'done',
            exitCode: 0,
            source: 'fake',
          };
        },
      }),
    );
    expect((await followed).toString()).toBe('x'.repeat(50));
    expect(notices).toEqual([
      `job ${job.id} has not written any output yet (/fake/log does not exist).`,
    ]);
  });
});

describe('following through a target that drops', () => {
  const ended: ObservationV1 = {
    kind: 'found',
    state: 'succeeded',
    nativeState: 'done',
    exitCode: 0,
    source: 'fake',
  };

  it('a first read cut short after some of it was written goes on from its last byte, never twice', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    fake.log = Buffer.from('0123456789abcdef');
    fake.state = ended;
    fake.failAfter = 3;
    const notices: string[] = [];
    const out = await collect((write) =>
      manager.follow(job.id, write, {
        all: true,
        chunkBytes: 2,
        onNotice: (text) => {
          notices.push(text);
          fake.failAfter = Number.POSITIVE_INFINITY; // the target is back
        },
      }),
    );
    expect(out.toString()).toBe('0123456789abcdef');
    expect(notices).toEqual([
      `cannot reach the target of job ${job.id}: Cannot connect to fake: refused; retrying.`,
    ]);
  });

  it('a target unreachable from the start, with no copy of the end kept: retried, then the range asked for', async () => {
    const job = await manager.submit({ argv: ['x'] }, { profile: 'f' });
    fake.log = Buffer.from('a\nb\nc\n');
    fake.state = ended;
    fake.unreachable = true;
    const notices: string[] = [];
    const out = await collect((write) =>
      manager.follow(job.id, write, {
        lines: 2,
        onNotice: (text) => {
          notices.push(text);
          fake.unreachable = false;
        },
      }),
    );
    expect(out.toString()).toBe('b\nc\n');
    expect(notices[0]).toContain(
      'no copy of its log’s end is kept yet. Retrying.'.replace('’', "'"),
    );
  });
});

describe('missingLogMessage', () => {
  const job = (fields: Partial<JobRecord>): JobRecord =>
    ({
      id: 'j1',
      externalId: '7',
      state: 'running',
      exitCode: null,
      signal: null,
      history: [],
      ...fields,
    }) as JobRecord;

  it('tells not started, nothing written yet, gone, and never started apart', () => {
    expect(missingLogMessage(job({ state: 'pending' }), 'p')).toEqual({
      message: 'job j1 has not started yet (pending): its log appears when it starts.',
      gone: false,
    });
    expect(missingLogMessage(job({ externalId: null, state: 'submitting' }), undefined).gone).toBe(
      false,
    );
    expect(missingLogMessage(job({}), '/l does not exist').message).toBe(
      'job j1 has not written any output yet (/l does not exist).',
    );
    expect(missingLogMessage(job({ state: 'failed', exitCode: 3 }), '/l does not exist')).toEqual({
      message: 'job j1 ran, but its log is gone (/l does not exist).',
      gone: true,
    });
    expect(missingLogMessage(job({ state: 'cancelled' }), 'x')).toEqual({
      message: 'job j1 ended (cancelled) before it started: it has no log.',
      gone: false,
    });
  });
});
