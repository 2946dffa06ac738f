/** The error of a plugin that implements a contract version this core does not know. */
import { YonderError } from './yonder-error.js';

const NAME = 'UnsupportedVersionError';
const MARKER = `yonder.error.${NAME}`;
const symbol = Symbol.for(MARKER);

/** A plugin implements a contract version this core does not support. */
export class UnsupportedVersionError extends YonderError {
  readonly [symbol] = true;

  constructor(what: string, version: unknown, supported: readonly string[]) {
    super(
      'E_UNSUPPORTED_VERSION',
      `${what} implements contract version ${JSON.stringify(version)}; this @yonder/core supports ${supported.join(', ')}.`,
    );
    this.name = NAME;
  }

  /** Whether `value` is an UnsupportedVersionError, from this copy of core or another. */
  static override isInstance(value: unknown): value is UnsupportedVersionError {
    return YonderError.hasMarker(value, MARKER);
  }
}
