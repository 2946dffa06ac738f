/**
 * `@yonder/core/backend-kit`: what plugin authors (backends, transports, stores) build with —
 * the fixed remote scripts and the job wrapper, the one quoting function, templates, the probe
 * cache, log tails, bounded buffers, path mapping, validation helpers, process identity and
 * state names. Nothing here changes a job's state; the JobManager alone does.
 */
export { chunks, commandFailure } from '../backend/command-output.js';
export { exitObservation } from '../backend/exit-observation.js';
export { readLogFile } from '../backend/local/read-log-file.js';
export {
  type ContainerJob,
  type ContainerLaunch,
  containerLaunch,
  launcherArgv,
  requestLaunch,
} from '../container/container-launch.js';
export {
  CONTAINER_CHECK_FUNCTIONS,
  CONTAINER_LAUNCH_SCRIPT,
} from '../container/container-scripts.js';
export type { PluginKind } from '../errors/no-such-plugin-error.js';
export { profileExists } from '../errors/profile-exists.js';
export { assertValid } from '../errors/validation-error.js';
export {
  createJobDirectory,
  ensurePrivateDirectory,
  openExclusive,
  writeExclusive,
} from '../fs/exclusive-files.js';
export { type ParsedJson, parseJson } from '../json/parse-json.js';
export { chooseTransport } from '../manager/choose-transport.js';
export { isWaiting } from '../manager/dependencies.js';
export { normaliseProfile } from '../manager/normalise-profile.js';
export { mapPath, mapSettingsPaths } from '../paths/map-paths.js';
export { cachedProbe } from '../probe/probe-cache.js';
export { readCacheEntry } from '../probe/read-cache-entry.js';
export {
  currentProcessIdentity,
  isProcessAlive,
  parseProcStat,
  readBootId,
  readProcessIdentity,
} from '../process/process-identity.js';
export { signalName } from '../process/signal-names.js';
export {
  BIN_DIR_FUNCTIONS,
  binDirProblems,
  CHECK_BIN_DIR_SCRIPT,
  UNTRUSTED_BIN_EXIT,
} from '../remote/bin-dir.js';
export { TRUSTED_DIRECTORY_FUNCTIONS } from '../remote/job-directory-functions.js';
export { JOB_WRAPPER_SCRIPT } from '../remote/job-wrapper-script.js';
export { outputBytes, READ_LOG_SCRIPT, readRemoteLog } from '../remote/read-remote-log.js';
export {
  EXIT_CODES_SCRIPT,
  epochToIso,
  jobPayload,
  outputField,
  PREPARE_JOB_DIRECTORY,
  parseExitCodes,
  withoutField,
} from '../remote/remote-scripts.js';
export {
  type JobDirectoryEntry,
  REMOVE_JOB_DIRECTORIES_SCRIPT,
  removeJobDirectories,
} from '../remote/remove-job-directories.js';
export { sliceLog, tailLinesStart } from '../remote/slice-log.js';
export {
  CHECK_PROGRAMS_SCRIPT,
  programProblems,
  RUN_TRUSTED_PROGRAM,
  TRUSTED_PROGRAM_FUNCTIONS,
} from '../remote/trusted-program.js';
export { renderEnvFile } from '../shell/render-env-file.js';
export { shJoin, shQuote } from '../shell/sh-quote.js';
export type { CleanupOutcomeV1 } from '../spec/backend/v1/backend-v1.js';
export {
  CONTAINER_RUNTIMES,
  type ContainerImage,
  type ContainerRuntime,
  type ContainerSpec,
  type ResolvedContainer,
} from '../spec/container.js';
export type { DependencyCondition, JobDependency, ProcessIdentity } from '../spec/job.js';
// The optional `listing()` of a store (a large history read fast), for store authors.
export type {
  ListingEntryV1,
  ListingOptionsV1,
  ListingV1,
  SaveProfileOptionsV1,
} from '../spec/store/v1/store-v1.js';
export {
  isActive,
  isJobState,
  isTerminal,
  JOB_STATES,
  TERMINAL_STATES,
} from '../state/job-states.js';
export {
  type NormalisedState,
  normaliseState,
  type StateDialect,
} from '../state/normalise-state.js';
export { listedJob } from '../store/listed-job.js';
export {
  checkTemplate,
  type ParsedTemplate,
  parseTemplate,
  renderTemplate,
  replacePlaceholder,
} from '../template/render-template.js';
export { splitCommandLine } from '../template/split-template.js';
export { BoundedBuffer, buildEnvironment, runLocal } from '../transport/local-transport.js';
export {
  checkPrivateEntry,
  checkTrustedPath,
  ensureTrustedDirectory,
  type TrustOptions,
  trustedRealPath,
} from '../trust/check-trusted-path.js';
export {
  appendPrivateFile,
  createPrivateFile,
  type PrivateWriteOptions,
  readAtMost,
  readPrivateFile,
  removePrivateFile,
  reserveSpareFile,
  touchPrivateFile,
  writeAll,
  writePrivateFileAtomic,
} from '../trust/private-files.js';
export {
  DEFAULT_SEARCH_PATH,
  fixedSearchPath,
  withFixedSearchPath,
} from '../trust/search-path.js';
export { trustedProgram } from '../trust/trusted-program.js';
export { describeMode, describeUser } from '../trust/user-name.js';
export { JobRecordSchema, validateJobRecord } from '../validation/job-record-schema.js';
export { DEPENDENCY_CONDITIONS } from '../validation/parse-dependency.js';
export { type ParseOptionsInput, parseOptions } from '../validation/parse-options.js';
export {
  checkSchema,
  type ProfileFields,
  ProfileSchema,
  pointerToPath,
  validateProfileFields,
} from '../validation/profile-schema.js';
export {
  MAX_SECRETS_FILE_BYTES,
  MAX_SETTINGS_BYTES,
  readInputFile,
  utf8Text,
} from '../validation/read-input-file.js';
export {
  checkPlainData,
  isReservedKey,
  MAX_JSON_DEPTH,
  RESERVED_KEYS,
} from '../validation/reserved-keys.js';
export {
  type BindMount,
  containerBinds,
  containerPlacementIssues,
  parseBind,
  resolveContainer,
  validateContainerFields,
} from '../validation/validate-container.js';
export {
  checkAbsolutePath,
  checkHost,
  checkText,
  ENV_NAME_PATTERN,
  EXTERNAL_ID_PATTERN,
  type ExternalId,
  HOST_PATTERN,
  PLUGIN_ID_PATTERN,
  PROFILE_NAME_PATTERN,
  parseExternalId,
  trimTrailingSlash,
} from '../validation/validate-fields.js';
export {
  timeLimitSeconds,
  validateJobSpec,
  validateResources,
} from '../validation/validate-job-spec.js';
