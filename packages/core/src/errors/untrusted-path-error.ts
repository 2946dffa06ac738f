/** The error of a path another user could change: named with its owner, its mode and the fix. */
import { YonderError } from './yonder-error.js';

const marker = Symbol.for('yonder.error.UntrustedPathError');

/**
 * A path yonder refuses to read from, write to or run in, because someone other than the user
 * (and root) owns it or can write to it, as OpenSSH's StrictModes refuses one. `path` is the
 * offending component (the path asked for, one of its parents, or a link on the way).
 */
export class UntrustedPathError extends YonderError {
  readonly [marker] = true;
  /** The path that was asked for. */
  readonly subject: string;
  /** The component that fails the rules. */
  readonly path: string;
  /** Its owner's uid. */
  readonly owner: number;
  /** Its permission bits, e.g. 0o777. */
  readonly mode: number;

  constructor(details: {
    subject: string;
    path: string;
    owner: number;
    mode: number;
    message: string;
  }) {
    super('E_UNTRUSTED_PATH', details.message);
    this.name = 'UntrustedPathError';
    this.subject = details.subject;
    this.path = details.path;
    this.owner = details.owner;
    this.mode = details.mode;
  }

  static override isInstance(value: unknown): value is UntrustedPathError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[marker] === true
    );
  }
}
