import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { NoSuchPluginError } from '../errors/no-such-plugin-error.js';
import { toYonderError, YonderError } from '../errors/yonder-error.js';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { StoreFactoryV1 } from '../spec/store/v1/store-factory-v1.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { assertBackend, createRegistry } from './registry.js';

function fakeBackend(id: string, overrides: Record<string, unknown> = {}): BackendV1 {
  return {
    specificationVersion: 'v1',
    id,
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'none',
      recoverSubmit: false,
      logs: false,
    },
    optionsSchema: {},
    validateProfile: () => [],
    targetKey: () => id,
    probe: async () => ({ ok: true, facts: {}, problems: [] }),
    submit: async () => ({ externalId: '1', state: 'running', data: {} }),
    poll: async () => new Map(),
    cancel: async () => new Map(),
    readLog: async () => ({ exists: false, text: '', offset: 0 }),
    ...overrides,
  } as unknown as BackendV1;
}

const transportFactory: TransportFactoryV1 = () => ({}) as TransportV1;
const storeFactory: StoreFactoryV1 = () => ({}) as StoreV1;

function thrown(fn: () => unknown): YonderError {
  try {
    fn();
  } catch (error) {
    expect(YonderError.isInstance(error)).toBe(true);
    return error as YonderError;
  }
  throw new Error('expected a YonderError, but nothing was thrown');
}

describe('createRegistry lookups', () => {
  const registry = createRegistry({
    backends: [fakeBackend('local'), fakeBackend('slurm')],
    transports: { local: transportFactory, ssh: transportFactory },
    stores: { fs: storeFactory },
  });

  it('returns what was registered', () => {
    expect(registry.backend('slurm').id).toBe('slurm');
    expect(registry.transport('ssh')).toBe(transportFactory);
    expect(registry.store('fs')).toBe(storeFactory);
  });

  it.each([
    ['backend', 'pbs', 'E_NO_SUCH_BACKEND', ['local', 'slurm']],
    ['transport', 'telnet', 'E_NO_SUCH_TRANSPORT', ['local', 'ssh']],
    ['store', 'sqlite', 'E_NO_SUCH_STORE', ['fs']],
  ] as const)(
    'an unknown %s id fails with %s listing what is available',
    (kind, id, code, available) => {
      const error = thrown(() => registry[kind](id));
      expect(error.code).toBe(code);
      expect(error).toBeInstanceOf(NoSuchPluginError);
      expect(error.message).toContain(`"${id}"`);
      for (const name of available) expect(error.message).toContain(name);
      expect((error as NoSuchPluginError).available).toEqual(available);
    },
  );

  it('says "(none)" when nothing of that kind is registered', () => {
    expect(thrown(() => createRegistry().store('fs')).message).toContain('(none)');
  });

  it('adds the hint for that kind and id to the message', () => {
    const hinted = createRegistry({ backends: [fakeBackend('local')] });
    hinted.hint('backend', 'slurm', 'Install it with: npm install @yonder/backend-slurm');
    hinted.hint('transport', 'ssh', 'Install it with: npm install @yonder/backend-ssh');
    const error = thrown(() => hinted.backend('slurm'));
    expect(error.message).toContain('npm install @yonder/backend-slurm');
    expect(error.message).toContain('local');
    expect(thrown(() => hinted.transport('ssh')).message).toContain('@yonder/backend-ssh');
    expect(thrown(() => hinted.backend('pbs')).message).not.toContain('npm install');
  });

  it('lists everything with origins', () => {
    const listed = createRegistry({ transports: { local: transportFactory } });
    listed.addBackend(fakeBackend('pbs'), { package: 'yonder-pbs', version: '1.2.3' });
    listed.addStore('mem', storeFactory, { package: 'yonder-mem', version: '0.1.0' });
    expect(listed.list()).toEqual({
      backends: [
        {
          id: 'pbs',
          specificationVersion: 'v1',
          origin: { package: 'yonder-pbs', version: '1.2.3' },
        },
      ],
      transports: [{ id: 'local' }],
      stores: [{ id: 'mem', origin: { package: 'yonder-mem', version: '0.1.0' } }],
    });
  });
});

describe('backend contract checks', () => {
  it('refuses a backend of contract v2 with E_UNSUPPORTED_VERSION listing v1', () => {
    const error = thrown(() =>
      createRegistry().addBackend(fakeBackend('pbs', { specificationVersion: 'v2' })),
    );
    expect(error.code).toBe('E_UNSUPPORTED_VERSION');
    expect(error.message).toContain('"v2"');
    expect(error.message).toContain('v1');
  });

  it('names the package a bad backend came from', () => {
    const error = thrown(() =>
      createRegistry().addBackend(fakeBackend('pbs', { specificationVersion: 'v2' }), {
        package: 'yonder-pbs',
        version: '9.0.0',
      }),
    );
    expect(error.message).toContain('yonder-pbs');
  });

  it('refuses a backend without a specificationVersion', () => {
    expect(thrown(() => assertBackend({ id: 'x' })).code).toBe('E_UNSUPPORTED_VERSION');
  });

  it('names every missing method', () => {
    const error = thrown(() =>
      createRegistry().addBackend(
        fakeBackend('pbs', { poll: undefined, readLog: 'not a function', cancel: undefined }),
      ),
    );
    expect(error.code).toBe('E_INTERNAL');
    expect(error.message).toContain('poll()');
    expect(error.message).toContain('readLog()');
    expect(error.message).toContain('cancel()');
    expect(error.message).not.toContain('submit()');
  });

  it('names missing capabilities, optionsSchema and a bad id', () => {
    const error = thrown(() =>
      assertBackend(fakeBackend('Bad Id', { capabilities: undefined, optionsSchema: null })),
    );
    expect(error.message).toContain('id (a lowercase id');
    expect(error.message).toContain('capabilities');
    expect(error.message).toContain('optionsSchema');
  });

  it.each([[null], [undefined], ['backend'], [42]])('refuses the non-object %j', (value) => {
    expect(thrown(() => assertBackend(value)).code).toBe('E_INTERNAL');
  });

  it('accepts a complete v1 backend', () => {
    expect(() => assertBackend(fakeBackend('pbs'))).not.toThrow();
  });
});

describe('duplicate ids', () => {
  it('refuses a second backend with the same id and keeps the first', () => {
    const first = fakeBackend('pbs');
    const registry = createRegistry({ backends: [first] });
    const error = thrown(() => registry.addBackend(fakeBackend('pbs')));
    expect(error.message).toContain('"pbs"');
    expect(registry.backend('pbs')).toBe(first);
  });

  it('refuses duplicate backends given at creation', () => {
    expect(() => createRegistry({ backends: [fakeBackend('pbs'), fakeBackend('pbs')] })).toThrow(
      /pbs/,
    );
  });

  // BUG: addTransport and addStore overwrite silently (registry.ts, addTransport/addStore),
  // unlike addBackend: a plugin can replace the built-in "local" or "ssh" transport unnoticed.
  it('refuses a second transport with the same id and keeps the first', () => {
    const registry = createRegistry({ transports: { ssh: transportFactory } });
    const other: TransportFactoryV1 = () => ({}) as TransportV1;
    expect(() => registry.addTransport('ssh', other)).toThrow(/ssh/);
    expect(registry.transport('ssh')).toBe(transportFactory);
  });

  it('refuses a second store with the same id and keeps the first', () => {
    const registry = createRegistry({ stores: { fs: storeFactory } });
    const other: StoreFactoryV1 = () => ({}) as StoreV1;
    expect(() => registry.addStore('fs', other)).toThrow(/fs/);
    expect(registry.store('fs')).toBe(storeFactory);
  });

  it('refuses a transport or store that is not a function', () => {
    const registry = createRegistry();
    expect(
      thrown(() => registry.addTransport('x', 'nope' as unknown as TransportFactoryV1)).code,
    ).toBe('E_INTERNAL');
    expect(thrown(() => registry.addStore('x', {} as unknown as StoreFactoryV1)).code).toBe(
      'E_INTERNAL',
    );
  });

  it('keeps a transport factory’s options schema, and refuses one that is not a schema', () => {
    const registry = createRegistry();
    const schema = Type.Object({ tag: Type.String() }, { additionalProperties: false });
    const withSchema: TransportFactoryV1 = Object.assign(() => ({}) as TransportV1, {
      optionsSchema: schema,
    });
    registry.addTransport('tagged', withSchema);
    expect(registry.transport('tagged').optionsSchema).toBe(schema);
    const broken = Object.assign(() => ({}) as TransportV1, { optionsSchema: 'strict' });
    const error = thrown(() =>
      registry.addTransport('broken', broken as unknown as TransportFactoryV1),
    );
    expect(error.code).toBe('E_INTERNAL');
    expect(error.message).toContain('"broken"');
    expect(() => registry.transport('broken')).toThrow(/No transport named "broken"/);
  });
});

describe('YonderError.isInstance', () => {
  it('recognises a structurally identical error from another copy of core', () => {
    const foreign = Object.assign(new Error('from another copy'), {
      [Symbol.for('yonder.error')]: true,
      code: 'E_TRANSPORT',
    });
    expect(foreign instanceof YonderError).toBe(false);
    expect(YonderError.isInstance(foreign)).toBe(true);
    expect(toYonderError(foreign)).toBe(foreign);
  });

  it('recognises a plain object with the marker', () => {
    expect(
      YonderError.isInstance({ [Symbol.for('yonder.error')]: true, code: 'E_STORE', message: 'm' }),
    ).toBe(true);
  });

  it.each([
    ['a plain Error', new Error('x')],
    ['an object with a code only', { code: 'E_STORE', message: 'x' }],
    ['a look-alike with a private symbol', { [Symbol('yonder.error')]: true, code: 'E_STORE' }],
    ['a marker that is not true', { [Symbol.for('yonder.error')]: 'yes' }],
    ['null', null],
    ['a string', 'E_STORE'],
  ])('rejects %s', (_what, value) => {
    expect(YonderError.isInstance(value)).toBe(false);
  });

  it('recognises real instances and subclasses', () => {
    expect(YonderError.isInstance(new YonderError('E_USAGE', 'x'))).toBe(true);
    expect(YonderError.isInstance(new NoSuchPluginError('backend', 'x', []))).toBe(true);
  });
});
