/** The error of a ledger record that cannot be read. */
import { YonderError } from './yonder-error.js';

const NAME = 'CorruptRecordError';
const MARKER = `yonder.error.${NAME}`;
const symbol = Symbol.for(MARKER);

/** A ledger record that cannot be read. Carries the file's path so it can be repaired by hand. */
export class CorruptRecordError extends YonderError {
  readonly [symbol] = true;
  readonly path: string;

  constructor(path: string, detail: string, cause?: unknown) {
    super('E_CORRUPT_RECORD', `Corrupt record ${path}: ${detail}`, { cause });
    this.name = NAME;
    this.path = path;
  }

  /** Whether `value` is a CorruptRecordError, from this copy of core or another. */
  static override isInstance(value: unknown): value is CorruptRecordError {
    return YonderError.hasMarker(value, MARKER);
  }
}
