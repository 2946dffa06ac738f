import { Type } from '@sinclair/typebox';
import { beforeEach, describe, expect, it } from 'vitest';
import { registerPlugin } from '../registry/register-plugin.js';
import { createRegistry, type Registry } from '../registry/registry.js';
import { sliceLog } from '../remote/slice-log.js';
import type {
  BackendCapabilitiesV1,
  BackendV1,
  ObservationV1,
  SubmitRequestV1,
} from '../spec/backend/v1/backend-v1.js';
import type { Profile } from '../spec/profile.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { chooseTransport } from './choose-transport.js';
import { JobManager } from './job-manager.js';
import { normaliseProfile } from './normalise-profile.js';
import { transportKey } from './transport-cache.js';

/** The profiles the relay backend was shown with the jobs it polled. */
const polledProfiles: Profile[] = [];

/** A backend that does everything through its transport: submit runs `echo ID` there. */
function relayBackend(capabilities: Partial<BackendCapabilitiesV1> = {}): BackendV1 {
  return {
    specificationVersion: 'v1',
    id: 'relay',
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'optional',
      recoverSubmit: false,
      logs: true,
      ...capabilities,
    },
    optionsSchema: Type.Object({}, { additionalProperties: false }),
    validateProfile: () => [],
    targetKey: (profile) => `relay:${profile.host ?? 'here'}`,
    async probe(_profile, context) {
      const result = await context.transport.run(['sh', '-c', 'echo reached']);
      return { ok: result.stdout === 'reached\n', facts: {}, problems: [] };
    },
    async submit(request: SubmitRequestV1, context) {
      const result = await context.transport.run(['echo', `job-${request.id}`]);
      return { externalId: result.stdout.trim(), state: 'running', data: {} };
    },
    async poll(jobs, context) {
      polledProfiles.push(...jobs.map((job) => job.profile));
      await context.transport.run(['true']);
      return new Map<string, ObservationV1>(
        jobs.map((job) => [
          job.id,
          { kind: 'found', state: 'running', nativeState: 'RUNNING', source: 'relay' },
        ]),
      );
    },
    async cancel(jobs) {
      return new Map(jobs.map((job) => [job.id, { kind: 'sent' }] as const));
    },
    async readLog(_job, _options, context) {
      const result = await context.transport.run(['echo', 'output'], { encoding: 'buffer' });
      return sliceLog(result.stdoutBytes as Buffer, {});
    },
  };
}

/** A third-party plugin: a transport that records every argv it runs, then runs it locally. */
function recordingPlugin(log: Array<{ tag: string; argv: readonly string[] }>) {
  const made: Profile[] = [];
  const closed: string[] = [];
  const factory: TransportFactoryV1 = Object.assign(
    (profile: Profile): TransportV1 => {
      made.push(profile);
      const local = createLocalTransport();
      const tag = String(profile.transportOptions?.tag);
      return {
        specificationVersion: 'v1',
        id: 'recording',
        target: `recording:${tag}`,
        run(argv, options) {
          log.push({ tag, argv });
          return local.run(argv, options);
        },
        runScript(script, args, options) {
          log.push({ tag, argv: ['sh', '-c', script, ...args] });
          return local.runScript(script, args, options);
        },
        async close() {
          closed.push(tag);
        },
      };
    },
    {
      optionsSchema: Type.Object(
        { tag: Type.String(), verbose: Type.Optional(Type.Boolean()) },
        { additionalProperties: false },
      ),
    },
  );
  const module = {
    createYonderPlugin: () => ({ specificationVersion: 'v1', transports: { recording: factory } }),
  };
  return { module, made, closed };
}

let store: StoreV1;
let registry: Registry;
let log: Array<{ tag: string; argv: readonly string[] }>;
let plugin: ReturnType<typeof recordingPlugin>;
let localRuns: number;

beforeEach(() => {
  store = createMemoryStore();
  log = [];
  localRuns = 0;
  plugin = recordingPlugin(log);
  registry = createRegistry({
    backends: [relayBackend({ transport: 'declared' })],
    transports: {
      local: () => {
        const local = createLocalTransport();
        return {
          ...local,
          run: (argv, options) => {
            localRuns += 1;
            return local.run(argv, options);
          },
        };
      },
    },
  });
  registerPlugin(registry, plugin.module, {
    package: 'yonder-transport-recording',
    version: '1.0.0',
  });
});

const manager = () =>
  new JobManager({ store, registry, stateDirectory: '/tmp', minPollIntervalMs: 0 });

describe('chooseTransport', () => {
  const backend = relayBackend({ transport: 'declared' });
  const bare = relayBackend();
  it('takes the profile’s own, else with a host the backend’s, else local', () => {
    expect(chooseTransport({ name: 'p', backend: 'relay', transport: 'mine' }, backend)).toBe(
      'mine',
    );
    expect(
      chooseTransport({ name: 'p', backend: 'relay', host: 'h', transport: 'mine' }, backend),
    ).toBe('mine');
    expect(chooseTransport({ name: 'p', backend: 'relay', host: 'h' }, backend)).toBe('declared');
    expect(chooseTransport({ name: 'p', backend: 'relay' }, backend)).toBe('local');
    expect(chooseTransport({ name: 'p', backend: 'relay', host: 'h' }, bare)).toBe('local');
  });
});

describe('transportKey', () => {
  const profile = (extra: Partial<Profile>): Profile => ({ name: 'p', backend: 'relay', ...extra });
  it('is the same for the same transport, host and options, in any key order', () => {
    expect(
      transportKey(
        't',
        profile({ host: 'h', transportOptions: { a: 1, b: { c: [1, 2], d: 'x' } } }),
      ),
    ).toBe(
      transportKey(
        't',
        profile({ host: 'h', transportOptions: { b: { d: 'x', c: [1, 2] }, a: 1 } }),
      ),
    );
    expect(transportKey('t', profile({}))).toBe(
      transportKey('t', profile({ transportOptions: {} })),
    );
  });
  it('differs when the transport, the host or any option differs', () => {
    const base = transportKey('t', profile({ host: 'h', transportOptions: { a: 1 } }));
    expect(transportKey('u', profile({ host: 'h', transportOptions: { a: 1 } }))).not.toBe(base);
    expect(transportKey('t', profile({ host: 'g', transportOptions: { a: 1 } }))).not.toBe(base);
    expect(transportKey('t', profile({ host: 'h', transportOptions: { a: 2 } }))).not.toBe(base);
    expect(transportKey('t', profile({ host: 'h', transportOptions: { a: '1' } }))).not.toBe(base);
    expect(transportKey('t', profile({ host: 'h', transportOptions: { a: [1] } }))).not.toBe(base);
  });
});

describe('a third-party transport chosen by profile.transport', () => {
  it('is made by the plugin’s factory with the profile’s options and carries every operation of the backend', async () => {
    const m = manager();
    await m.saveProfile({
      name: 'rec',
      backend: 'relay',
      transport: 'recording',
      transportOptions: { tag: 'one' },
    });
    const check = await m.checkProfile('rec');
    expect(check.probe?.ok).toBe(true);
    const job = await m.submit({ argv: ['anything'] }, { profile: 'rec' });
    expect(job).toMatchObject({ state: 'running', externalId: `job-${job.id}` });
    await m.refresh();
    const { chunk } = await m.logs(job.id);
    expect(chunk.data.toString()).toBe('output\n');
    expect(log.map((entry) => entry.argv)).toEqual([
      ['sh', '-c', 'echo reached'],
      ['echo', `job-${job.id}`],
      ['true'],
      ['echo', 'output'],
    ]);
    expect(log.every((entry) => entry.tag === 'one')).toBe(true);
    expect(localRuns).toBe(0);
    // One transport for the target, shared by every operation, closed with the manager.
    expect(plugin.made).toHaveLength(1);
    expect(plugin.made[0]?.transportOptions).toEqual({ tag: 'one' });
    await m.close();
    expect(plugin.closed).toEqual(['one']);
  });

  it('makes one transport per transport id, host and options', async () => {
    const m = manager();
    const save = (name: string, extra: Partial<Profile>) =>
      m.saveProfile({ name, backend: 'relay', transport: 'recording', ...extra });
    await save('a', { transportOptions: { tag: 'x', verbose: true } });
    await save('b', { transportOptions: { verbose: true, tag: 'x' } });
    await save('c', { transportOptions: { tag: 'y' } });
    await save('d', { host: 'elsewhere', transportOptions: { tag: 'x', verbose: true } });
    for (const name of ['a', 'b', 'c', 'd']) await m.checkProfile(name);
    expect(plugin.made.map((profile) => profile.name)).toEqual(['a', 'c', 'd']);
    await m.close();
    expect(plugin.closed.sort()).toEqual(['x', 'x', 'y']);
  });

  it('checks transportOptions against the transport’s schema, naming each field', async () => {
    const issues = await manager().validateProfile({
      name: 'bad',
      backend: 'relay',
      transport: 'recording',
      transportOptions: { tag: 7, extra: 'no' },
    });
    expect(issues.map((issue) => issue.path).sort()).toEqual([
      'transportOptions.extra',
      'transportOptions.tag',
    ]);
    const missing = await manager().validateProfile({
      name: 'bad',
      backend: 'relay',
      transport: 'recording',
    });
    expect(missing).toContainEqual({
      path: 'transportOptions.tag',
      message: 'expected required property',
    });
    expect(new Set(missing.map((issue) => issue.path))).toEqual(new Set(['transportOptions.tag']));
  });

  it('an unknown transport is a profile issue naming it and what is available', async () => {
    const issues = await manager().validateProfile({
      name: 'p',
      backend: 'relay',
      transport: 'mine',
    });
    expect(issues).toEqual([
      {
        path: 'transport',
        message: expect.stringMatching(/No transport named "mine"\. Available: local, recording/),
      },
    ]);
    // The backend's declared transport is needed only with a host.
    expect(await manager().validateProfile({ name: 'p', backend: 'relay', host: 'h' })).toEqual([
      { path: 'transport', message: expect.stringContaining('No transport named "declared"') },
    ]);
    expect(await manager().validateProfile({ name: 'p', backend: 'relay' })).toEqual([]);
    expect(
      (await manager().validateProfile({ name: 'p', backend: 'relay', transport: 'Bad id' })).map(
        (issue) => issue.path,
      ),
    ).toEqual(['transport']);
  });

  it('a transport with no schema gets its options unchecked', async () => {
    expect(
      await manager().validateProfile({
        name: 'p',
        backend: 'relay',
        transportOptions: { anything: [1, 'two'] },
      }),
    ).toEqual([]);
  });
});

describe('profiles an older version stored with an ssh field', () => {
  const legacy = {
    name: 'old',
    backend: 'relay',
    host: 'h',
    transport: 'recording',
    ssh: { tag: 'legacy', verbose: true },
  } as Profile;

  it('read with their settings as transportOptions, which set ones override', () => {
    expect(normaliseProfile(legacy)).toEqual({
      name: 'old',
      backend: 'relay',
      host: 'h',
      transport: 'recording',
      transportOptions: { tag: 'legacy', verbose: true },
    });
    expect(
      normaliseProfile({ ...legacy, transportOptions: { tag: 'new' } }).transportOptions,
    ).toEqual({ tag: 'new', verbose: true });
    // Without a host the settings were never used, and are dropped.
    const { host: _host, ...hostless } = legacy;
    expect(normaliseProfile(hostless)).not.toHaveProperty('transportOptions');
    expect(normaliseProfile(hostless)).not.toHaveProperty('ssh');
  });

  it('keep working: the manager reads them, validates them and hands the transport their settings', async () => {
    const stored = createMemoryStore();
    store = {
      ...stored,
      getProfile: async (name) =>
        name === 'old' ? structuredClone(legacy) : stored.getProfile(name),
    };
    const m = manager();
    expect(await m.profile('old')).not.toHaveProperty('ssh');
    expect((await m.checkProfile('old')).issues).toEqual([]);
    const job = await m.submit({ argv: ['x'] }, { profile: 'old' });
    expect(job.profileSnapshot.transportOptions).toEqual({ tag: 'legacy', verbose: true });
    expect(plugin.made.map((profile) => profile.transportOptions)).toEqual([
      { tag: 'legacy', verbose: true },
    ]);
    // A job recorded by an older version (its snapshot has the ssh field) reaches the same transport.
    await store.updateJob(job.id, (current) => ({
      ...current,
      profileSnapshot: structuredClone(legacy),
    }));
    const fresh = manager();
    await fresh.refresh();
    expect(plugin.made.at(-1)?.transportOptions).toEqual({ tag: 'legacy', verbose: true });
    expect(log.at(-1)).toEqual({ tag: 'legacy', argv: ['true'] });
    // The backend, too, sees the settings only as transportOptions.
    expect(polledProfiles.at(-1)).not.toHaveProperty('ssh');
    expect(polledProfiles.at(-1)?.transportOptions).toEqual({ tag: 'legacy', verbose: true });
  });
});

describe('a registry without transports', () => {
  it('has the built-in local transport, so the local backend works with nothing else', async () => {
    const registry = createRegistry({ backends: [relayBackend()] });
    expect(registry.list().transports.map((entry) => entry.id)).toEqual(['local']);
    const manager = new JobManager({ store: createMemoryStore(), registry, stateDirectory: '/' });
    await manager.saveProfile({ name: 'here', backend: 'relay' });
    const job = await manager.submit({ argv: ['true'] }, { profile: 'here' });
    expect(job.state).toBe('running');
    expect(job.externalId).toBe(`job-${job.id}`);
    await manager.close();
  });

  it('refuses a submit whose transport is missing before any record is written', async () => {
    const store = createMemoryStore();
    const registry = createRegistry({ backends: [relayBackend()] });
    const manager = new JobManager({ store, registry, stateDirectory: '/' });
    await store.saveProfile({ name: 'far', backend: 'relay', transport: 'nowhere' });
    await expect(manager.submit({ argv: ['true'] }, { profile: 'far' })).rejects.toMatchObject({
      code: 'E_NO_SUCH_TRANSPORT',
    });
    expect((await store.listJobs({})).jobs).toEqual([]);
    await manager.close();
  });
});
