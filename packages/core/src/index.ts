/**
 * The root of `@yonder/core`: the contracts, the errors, the JobManager, the registry and the
 * built-in local pieces. Helpers for plugin authors are in `@yonder/core/backend-kit`, the
 * memory store and test helpers in `@yonder/core/testing`, the conformance kit in
 * `@yonder/core/conformance`; state-changing internals are not exported.
 */
export { createLocalBackend, type LocalBackendOptions } from './backend/local/local-backend.js';
export {
  createWorkstationBackend,
  type WorkstationBackendOptions,
} from './backend/workstation/workstation-backend.js';
export * from './errors/index.js';
export type { JsonObject, JsonValue } from './json/json-value.js';
export {
  JobManager,
  type JobManagerOptions,
  type ListOptions,
  type RefreshOptions,
  type WaitOptions,
} from './manager/job-manager.js';
export type { JobEvent, JobWatch, WatchJobsOptions } from './manager/watch-jobs.js';
export { registerPlugin } from './registry/register-plugin.js';
export {
  createRegistry,
  type PluginOrigin,
  type Registry,
  type RegistryEntries,
} from './registry/registry.js';
export * from './spec/index.js';
export { createLocalTransport } from './transport/local-transport.js';

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;

/** TypeBox, re-exported so plugins build option schemas with the same copy core checks them with. */
export { type Static, type TSchema, Type } from '@sinclair/typebox';
