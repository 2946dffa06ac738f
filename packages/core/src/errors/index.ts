/** The errors yonder throws on purpose, each with a stable code and its own marker, and the one way to read the message of anything thrown. */
export { CorruptRecordError } from './corrupt-record-error.js';
export { getErrorMessage } from './get-error-message.js';
export { NoSuchPluginError } from './no-such-plugin-error.js';
export { UnsupportedVersionError } from './unsupported-version-error.js';
export { UntrustedPathError } from './untrusted-path-error.js';
export { ValidationError, type ValidationIssue } from './validation-error.js';
export { toYonderError, YonderError, type YonderErrorCode } from './yonder-error.js';
