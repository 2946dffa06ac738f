export { exitObservation } from './backend/exit-observation.js';
export {
  createLocalBackend,
  LOCAL_BACKEND_ID,
  type LocalBackendOptions,
  localWorkdir,
} from './backend/local/local-backend.js';
export { readLogFile, tailLines } from './backend/local/read-log-file.js';
export {
  createWorkstationBackend,
  type WorkstationBackendOptions,
} from './backend/workstation/workstation-backend.js';
export * from './errors/index.js';
export {
  createJobDirectory,
  ensurePrivateDirectory,
  openExclusive,
  writeExclusive,
} from './fs/exclusive-files.js';
export type { JsonObject, JsonValue } from './json/json-value.js';
export {
  BUILTIN_LOCAL_PROFILE,
  JobManager,
  type JobManagerOptions,
  type ListOptions,
  type RefreshOptions,
  type WaitOptions,
} from './manager/job-manager.js';
export { mapPath, mapSettingsPaths } from './paths/map-paths.js';
export {
  currentProcessIdentity,
  isProcessAlive,
  parseProcStat,
  readBootId,
  readProcessIdentity,
} from './process/process-identity.js';
export { signalName } from './process/signal-names.js';
export { registerPlugin } from './registry/register-plugin.js';
export {
  assertBackend,
  createRegistry,
  type PluginOrigin,
  type Registry,
  type RegistryEntries,
  type StoreFactory,
  SUPPORTED_SPECIFICATION_VERSIONS,
  type TransportFactory,
} from './registry/registry.js';
export { renderEnvFile } from './shell/render-env-file.js';
export { shJoin, shQuote } from './shell/sh-quote.js';
export * from './spec/index.js';
export * from './state/index.js';
export { createMemoryStore } from './store/memory-store.js';
export * from './template/index.js';
export {
  BoundedBuffer,
  buildEnvironment,
  createLocalTransport,
  runLocal,
} from './transport/local-transport.js';
export * from './validation/index.js';

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;

/** TypeBox, re-exported so plugins build option schemas with the same copy core checks them with. */
export { type Static, type TSchema, Type } from '@sinclair/typebox';
export { cachedProbe } from './probe/probe-cache.js';
export {
  JOB_FILE_FUNCTIONS,
  PRIVATE_DIRECTORY_FUNCTIONS,
  TRUSTED_DIRECTORY_FUNCTIONS,
} from './remote/job-directory-functions.js';
export { JOB_WRAPPER_SCRIPT } from './remote/job-wrapper-script.js';
export {
  EXIT_CODES_SCRIPT,
  epochToIso,
  type JobEnd,
  jobPayload,
  outputField,
  PREPARE_JOB_DIRECTORY,
  parseExitCodes,
  parseJobEnds,
  READ_LOG_SCRIPT,
  readRemoteLog,
  withoutField,
} from './remote/remote-scripts.js';
