import type { BackendV1 } from '../../backend/v1/backend-v1.js';
import type { StoreFactoryV1 } from '../../store/v1/store-factory-v1.js';
import type { TransportFactoryV1 } from '../../transport/v1/transport-factory-v1.js';

/**
 * What a plugin package gives yonder. A package is a plugin when it exports
 * `createYonderPlugin(options)` returning one of these (the options come from the user's
 * config file).
 */
export interface PluginV1 {
  readonly specificationVersion: 'v1';
  /** Backends, registered under their `id`. */
  readonly backends?: readonly BackendV1[];
  /** Transports by id, e.g. `{ mine: (profile) => createMyTransport({ profile }) }`. */
  readonly transports?: Readonly<Record<string, TransportFactoryV1>>;
  /** Stores by id. */
  readonly stores?: Readonly<Record<string, StoreFactoryV1>>;
}

/** The function a plugin package exports as `createYonderPlugin`. */
export type PluginFactoryV1 = (options: Readonly<Record<string, unknown>>) => PluginV1;
