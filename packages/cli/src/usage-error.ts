/** The CLI's error for a command line it cannot understand. */
import { YonderError } from '@yonder/core';

const NAME = 'UsageError';
const MARKER = `yonder.error.${NAME}`;
const symbol = Symbol.for(MARKER);

/** A command line that cannot be understood: exit status 2. */
export class UsageError extends YonderError {
  readonly [symbol] = true;

  constructor(message: string) {
    super('E_USAGE', message);
    this.name = NAME;
  }

  /** Whether `value` is a UsageError, from this copy of the CLI or another. */
  static override isInstance(value: unknown): value is UsageError {
    return YonderError.hasMarker(value, MARKER);
  }
}
