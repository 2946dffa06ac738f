const marker = Symbol.for('yonder.error');

/** Stable error codes. Scripts and the CLI's `--json` envelope rely on them. */
export type YonderErrorCode =
  | 'E_NO_SUCH_BACKEND'
  | 'E_NO_SUCH_TRANSPORT'
  | 'E_NO_SUCH_STORE'
  | 'E_PLUGIN'
  | 'E_INVALID_CONFIG'
  | 'E_UNSUPPORTED_VERSION'
  | 'E_INVALID_PROFILE'
  | 'E_INVALID_JOB_SPEC'
  | 'E_INVALID_TEMPLATE'
  | 'E_UNSAFE_VALUE'
  | 'E_TRANSPORT'
  | 'E_COMMAND_NOT_FOUND'
  | 'E_TIMEOUT'
  | 'E_SCHEDULER_UNAVAILABLE'
  | 'E_SUBMIT_FAILED'
  | 'E_CANCEL_FAILED'
  | 'E_NO_SUCH_JOB'
  | 'E_AMBIGUOUS_JOB'
  | 'E_NO_SUCH_PROFILE'
  | 'E_PROFILE_EXISTS'
  | 'E_CORRUPT_RECORD'
  | 'E_UNTRUSTED_PATH'
  | 'E_STORE'
  | 'E_LOG_UNAVAILABLE'
  | 'E_USAGE'
  | 'E_INTERNAL';

export interface YonderErrorOptions {
  cause?: unknown;
}

/**
 * The one base class of every error yonder throws on purpose. `code` is stable;
 * `message` is for people. `isInstance` works across duplicated copies of core.
 */
export class YonderError extends Error {
  readonly [marker] = true;
  readonly code: YonderErrorCode;

  constructor(code: YonderErrorCode, message: string, options: YonderErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'YonderError';
    this.code = code;
  }

  static isInstance(value: unknown): value is YonderError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[marker] === true
    );
  }

  /** A plain object for ledgers and JSON output: code and message only. */
  toJSON(): { code: YonderErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

/** Wrap anything thrown into a YonderError, keeping the original as `cause`. */
export function toYonderError(
  error: unknown,
  code: YonderErrorCode = 'E_INTERNAL',
  context?: string,
): YonderError {
  if (YonderError.isInstance(error)) return error;
  const text = error instanceof Error ? error.message : String(error);
  return new YonderError(code, context ? `${context}: ${text}` : text, { cause: error });
}
