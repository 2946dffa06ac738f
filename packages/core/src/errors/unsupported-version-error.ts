import { YonderError } from './yonder-error.js';

/** A plugin implements a contract version this core does not support. */
export class UnsupportedVersionError extends YonderError {
  constructor(what: string, version: unknown, supported: readonly string[]) {
    super(
      'E_UNSUPPORTED_VERSION',
      `${what} implements contract version ${JSON.stringify(version)}; this @yonder/core supports ${supported.join(', ')}.`,
    );
    this.name = 'UnsupportedVersionError';
  }
}
