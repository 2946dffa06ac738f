import { type Static, Type } from '@sinclair/typebox';
import { beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../errors/validation-error.js';
import { createRegistry, type Registry } from '../registry/registry.js';
import type { BackendV1, ObservationV1 } from '../spec/backend/v1/backend-v1.js';
import type { Profile } from '../spec/profile.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { JobManager } from './job-manager.js';

const FlavourSchema = Type.Object(
  { flavour: Type.Optional(Type.String()), size: Type.Optional(Type.Integer({ minimum: 1 })) },
  { additionalProperties: false },
);
type Flavour = Static<typeof FlavourSchema>;

const TagSchema = Type.Object({ tag: Type.String() }, { additionalProperties: false });
type Tag = Static<typeof TagSchema>;

/** What the typed backend and transport were handed, operation by operation. */
let seen: Array<{ operation: string; options: Flavour }>;
let made: Tag[];

/** A backend typed by its schema: it reads `context.options` and never `profile.options`. */
function flavourBackend(): BackendV1<Flavour> {
  const note = (operation: string, options: Flavour) => seen.push({ operation, options });
  return {
    specificationVersion: 'v1',
    id: 'flavour',
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'optional',
      recoverSubmit: false,
      logs: true,
      transport: 'tagged',
    },
    optionsSchema: FlavourSchema,
    validateProfile: () => [],
    targetKey(profile, options) {
      note('targetKey', options);
      return `flavour:${profile.host ?? 'here'}:${options.flavour ?? ''}`;
    },
    async probe(_profile, context) {
      note('probe', context.options);
      return { ok: true, facts: {}, problems: [] };
    },
    async submit(request, context) {
      note('submit', context.options);
      return { externalId: request.id, state: 'running', data: {} };
    },
    async poll(jobs, context) {
      note('poll', context.options);
      return new Map<string, ObservationV1>(
        jobs.map((job) => [
          job.id,
          { kind: 'found', state: 'running', nativeState: 'R', source: 'flavour' },
        ]),
      );
    },
    async cancel(jobs, context) {
      note('cancel', context.options);
      return new Map(jobs.map((job) => [job.id, { kind: 'sent' }] as const));
    },
    async readLog(_job, _options, context) {
      note('readLog', context.options);
      return { exists: true, data: Buffer.alloc(0), start: 0, offset: 0, size: 0 };
    },
  };
}

/** A transport factory typed by its schema: it gets the checked `transportOptions` as `options`. */
const tagged: TransportFactoryV1<Tag> = Object.assign(
  (_profile: Profile, options: Tag) => {
    made.push(options);
    return { ...createLocalTransport(), id: 'tagged', target: `tagged:${options.tag}` };
  },
  { optionsSchema: TagSchema },
);

let store: StoreV1;
let registry: Registry;

beforeEach(() => {
  seen = [];
  made = [];
  store = createMemoryStore();
  registry = createRegistry({ backends: [flavourBackend()], transports: { tagged } });
});

const manager = () =>
  new JobManager({ store, registry, stateDirectory: '/tmp', minPollIntervalMs: 0 });

const profile: Profile = {
  name: 'p',
  backend: 'flavour',
  host: 'h',
  options: { flavour: 'mint', size: 2 },
  transportOptions: { tag: 'blue' },
};

describe('options a backend and a transport get', () => {
  it('are the profile’s, checked, in every operation and in targetKey', async () => {
    const m = manager();
    await m.saveProfile(profile);
    await m.checkProfile('p');
    const job = await m.submit({ argv: ['x'] }, { profile: 'p' });
    await m.refresh();
    await m.logs(job.id);
    await m.cancel([job.id]);
    // cancel goes on refreshing (and repeating the cancel) until the job ends; those come after.
    expect(seen.map((entry) => entry.operation).slice(0, 6)).toEqual([
      'probe',
      'targetKey',
      'submit',
      'poll',
      'readLog',
      'cancel',
    ]);
    for (const entry of seen) expect(entry.options).toEqual({ flavour: 'mint', size: 2 });
    expect(job.target).toBe('flavour:h:mint');
    expect(made).toEqual([{ tag: 'blue' }]);
    await m.close();
  });

  it('are {} when the profile has none', async () => {
    const m = manager();
    await m.saveProfile({
      name: 'bare',
      backend: 'flavour',
      host: 'h',
      transportOptions: { tag: 't' },
    });
    await m.submit({ argv: ['x'] }, { profile: 'bare' });
    expect(seen.map((entry) => entry.options)).toEqual([{}, {}]);
    await m.close();
  });

  it('that do not fit the backend’s schema stop a submit before anything is recorded or run', async () => {
    // Stored without the manager (by hand, or before the schema changed): saving would refuse it.
    await store.saveProfile({ ...profile, options: { flavour: 3, size: 0, colour: 'red' } });
    const error = await manager()
      .submit({ argv: ['x'] }, { profile: 'p' })
      .catch((thrown: unknown) => thrown);
    expect(ValidationError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'E_INVALID_PROFILE',
      message: expect.stringContaining('Profile "p" has invalid options for the flavour backend'),
    });
    expect((error as ValidationError).issues.map((issue) => issue.path).sort()).toEqual([
      'options.colour',
      'options.flavour',
      'options.size',
    ]);
    expect(seen).toEqual([]);
    expect(made).toEqual([]);
    expect((await store.listJobs({})).jobs).toEqual([]);
  });

  it('that do not fit the transport’s schema never reach its factory', async () => {
    await store.saveProfile({ ...profile, transportOptions: { tag: 7 } });
    const m = manager();
    await expect(m.submit({ argv: ['x'] }, { profile: 'p' })).rejects.toMatchObject({
      code: 'E_INVALID_PROFILE',
      message: expect.stringContaining('Profile "p" has invalid options for the tagged transport'),
      issues: [{ path: 'transportOptions.tag', message: 'expected string' }],
    });
    expect(made).toEqual([]);
    expect(seen.map((entry) => entry.operation)).not.toContain('submit');
    await m.close();
  });
});
