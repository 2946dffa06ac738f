/** The contract of a store factory: how the registry opens a ledger at a location. */
import type { StoreV1 } from './store-v1.js';

/** Opens a store at a location (a state directory for file stores), registered under an id. */
export type StoreFactoryV1 = (options: { location: string }) => StoreV1;
