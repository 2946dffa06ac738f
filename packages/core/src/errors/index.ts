export { CorruptRecordError } from './corrupt-record-error.js';
export { NoSuchPluginError, type PluginKind } from './no-such-plugin-error.js';
export { UnsupportedVersionError } from './unsupported-version-error.js';
export { UntrustedPathError } from './untrusted-path-error.js';
export { assertValid, ValidationError, type ValidationIssue } from './validation-error.js';
export {
  toYonderError,
  YonderError,
  type YonderErrorCode,
  type YonderErrorOptions,
} from './yonder-error.js';
