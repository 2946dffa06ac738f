/** The registry: string ids to the backends, transports and stores yonder can use, each checked as it is added. */
import { NoSuchPluginError, type PluginKind } from '../errors/no-such-plugin-error.js';
import { UnsupportedVersionError } from '../errors/unsupported-version-error.js';
import { YonderError } from '../errors/yonder-error.js';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { StoreFactoryV1 } from '../spec/store/v1/store-factory-v1.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { PLUGIN_ID_PATTERN } from '../validation/validate-fields.js';

export const SUPPORTED_SPECIFICATION_VERSIONS = ['v1'] as const;

/** Where a plugin came from, for `yonder plugins` and error messages. */
export interface PluginOrigin {
  package: string;
  version: string;
}

export interface RegistryEntries {
  backends?: readonly BackendV1[];
  transports?: Readonly<Record<string, TransportFactoryV1>>;
  stores?: Readonly<Record<string, StoreFactoryV1>>;
}

export interface Registry {
  backend(id: string): BackendV1;
  transport(id: string): TransportFactoryV1;
  store(id: string): StoreFactoryV1;
  /** Add a backend (e.g. a plugin's) after creation. Checks its shape and contract version. */
  addBackend(backend: BackendV1, origin?: PluginOrigin): void;
  addTransport(id: string, factory: TransportFactoryV1, origin?: PluginOrigin): void;
  addStore(id: string, factory: StoreFactoryV1, origin?: PluginOrigin): void;
  list(): {
    backends: Array<{ id: string; specificationVersion: string; origin?: PluginOrigin }>;
    transports: Array<{ id: string; origin?: PluginOrigin }>;
    stores: Array<{ id: string; origin?: PluginOrigin }>;
  };
  /** Hints for missing ids (e.g. which package to install), keyed by kind and id. */
  hint(kind: PluginKind, id: string, text: string): void;
}

/**
 * Check that a value is a backend this core can drive.
 * @throws YonderError `E_UNSUPPORTED_VERSION` for another contract version,
 *   `E_INVALID_PROFILE`-free `E_INTERNAL` listing missing members otherwise.
 */
export function assertBackend(value: unknown, what = 'The backend'): asserts value is BackendV1 {
  if (typeof value !== 'object' || value === null) {
    throw new YonderError('E_INTERNAL', `${what} is not an object.`);
  }
  const candidate = value as Record<string, unknown>;
  if (candidate.specificationVersion !== 'v1') {
    throw new UnsupportedVersionError(
      what,
      candidate.specificationVersion,
      SUPPORTED_SPECIFICATION_VERSIONS,
    );
  }
  const missing: string[] = [];
  if (typeof candidate.id !== 'string' || !PLUGIN_ID_PATTERN.test(candidate.id))
    missing.push('id (a lowercase id such as "pbs")');
  for (const method of [
    'validateProfile',
    'targetKey',
    'probe',
    'submit',
    'poll',
    'cancel',
    'readLog',
  ]) {
    if (typeof candidate[method] !== 'function') missing.push(`${method}()`);
  }
  if (typeof candidate.capabilities !== 'object' || candidate.capabilities === null)
    missing.push('capabilities');
  if (typeof candidate.optionsSchema !== 'object' || candidate.optionsSchema === null)
    missing.push('optionsSchema');
  if (missing.length > 0) {
    throw new YonderError(
      'E_INTERNAL',
      `${what} does not implement the backend contract v1: missing or invalid ${missing.join(', ')}.`,
    );
  }
}

/**
 * The map from string ids to plugins. An unknown id is an error that lists what is available
 * (and, when known, which package to install). The built-in `local` transport is always
 * registered, unless the entries give their own.
 */
export function createRegistry(entries: RegistryEntries = {}): Registry {
  const backends = new Map<string, { backend: BackendV1; origin?: PluginOrigin }>();
  const transports = new Map<string, { factory: TransportFactoryV1; origin?: PluginOrigin }>();
  const stores = new Map<string, { factory: StoreFactoryV1; origin?: PluginOrigin }>();
  const hints = new Map<string, string>();

  const registry: Registry = {
    backend(id) {
      const entry = backends.get(id);
      if (!entry)
        throw new NoSuchPluginError(
          'backend',
          id,
          [...backends.keys()],
          hints.get(`backend:${id}`),
        );
      return entry.backend;
    },
    transport(id) {
      const entry = transports.get(id);
      if (!entry)
        throw new NoSuchPluginError(
          'transport',
          id,
          [...transports.keys()],
          hints.get(`transport:${id}`),
        );
      return entry.factory;
    },
    store(id) {
      const entry = stores.get(id);
      if (!entry)
        throw new NoSuchPluginError('store', id, [...stores.keys()], hints.get(`store:${id}`));
      return entry.factory;
    },
    addBackend(backend, origin) {
      assertBackend(backend, origin ? `The backend from ${origin.package}` : 'The backend');
      if (backends.has(backend.id)) {
        throw new YonderError(
          'E_INTERNAL',
          `A backend named "${backend.id}" is already registered.`,
        );
      }
      backends.set(backend.id, origin ? { backend, origin } : { backend });
    },
    addTransport(id, factory, origin) {
      if (typeof factory !== 'function')
        throw new YonderError('E_INTERNAL', `Transport "${id}" is not a factory function.`);
      const schema: unknown = factory.optionsSchema;
      if (schema !== undefined && (typeof schema !== 'object' || schema === null))
        throw new YonderError(
          'E_INTERNAL',
          `Transport "${id}" has an optionsSchema that is not a schema object.`,
        );
      if (transports.has(id)) {
        throw new YonderError('E_INTERNAL', `A transport named "${id}" is already registered.`);
      }
      transports.set(id, origin ? { factory, origin } : { factory });
    },
    addStore(id, factory, origin) {
      if (typeof factory !== 'function')
        throw new YonderError('E_INTERNAL', `Store "${id}" is not a factory function.`);
      if (stores.has(id)) {
        throw new YonderError('E_INTERNAL', `A store named "${id}" is already registered.`);
      }
      stores.set(id, origin ? { factory, origin } : { factory });
    },
    list() {
      return {
        backends: [...backends.values()].map(({ backend, origin }) => ({
          id: backend.id,
          specificationVersion: backend.specificationVersion,
          ...(origin ? { origin } : {}),
        })),
        transports: [...transports.entries()].map(([id, { origin }]) => ({
          id,
          ...(origin ? { origin } : {}),
        })),
        stores: [...stores.entries()].map(([id, { origin }]) => ({
          id,
          ...(origin ? { origin } : {}),
        })),
      };
    },
    hint(kind, id, text) {
      hints.set(`${kind}:${id}`, text);
    },
  };
  for (const backend of entries.backends ?? []) registry.addBackend(backend);
  for (const [id, factory] of Object.entries(entries.transports ?? {}))
    registry.addTransport(id, factory);
  // The built-in local transport is always there (a registry may give its own instead).
  if (!transports.has('local')) registry.addTransport('local', () => createLocalTransport());
  for (const [id, factory] of Object.entries(entries.stores ?? {})) registry.addStore(id, factory);
  return registry;
}
