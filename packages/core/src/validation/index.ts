export {
  checkSchema,
  type ProfileFields,
  ProfileSchema,
  pointerToPath,
  validateProfileFields,
} from './profile-schema.js';
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
