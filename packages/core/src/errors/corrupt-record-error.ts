import { YonderError } from './yonder-error.js';

/** A ledger record that cannot be read. Carries the file's path so it can be repaired by hand. */
export class CorruptRecordError extends YonderError {
  readonly path: string;

  constructor(path: string, detail: string, cause?: unknown) {
    super('E_CORRUPT_RECORD', `Corrupt record ${path}: ${detail}`, { cause });
    this.name = 'CorruptRecordError';
    this.path = path;
  }
}
