import { YonderError } from '@yonder/core';

/** A command line that cannot be understood: exit status 2. */
export class UsageError extends YonderError {
  constructor(message: string) {
    super('E_USAGE', message);
    this.name = 'UsageError';
  }
}
