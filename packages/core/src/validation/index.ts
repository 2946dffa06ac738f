export { JobRecordSchema, validateJobRecord } from './job-record-schema.js';
export {
  checkSchema,
  type ProfileFields,
  ProfileSchema,
  pointerToPath,
  validateProfileFields,
} from './profile-schema.js';
export {
  MAX_SECRETS_FILE_BYTES,
  MAX_SETTINGS_BYTES,
  readInputFile,
} from './read-input-file.js';
export {
  checkPlainData,
  isReservedKey,
  MAX_JSON_DEPTH,
  RESERVED_KEYS,
} from './reserved-keys.js';
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
} from './validate-fields.js';
export { validateJobSpec, validateResources } from './validate-job-spec.js';
