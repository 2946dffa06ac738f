/** The one base class of every error yonder throws on purpose, its stable codes, the markers that let `isInstance` work across copies of core, and the wrapping of anything thrown into one. */
import type { JsonObject } from '../json/json-value.js';
import { getErrorMessage } from './get-error-message.js';

/** The marker every YonderError carries (each subclass adds `yonder.error.<Name>`). */
const MARKER = 'yonder.error';
const symbol = Symbol.for(MARKER);

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
  /** Logging in to the host needs a person (a password, a second factor, a passphrase) and no kept login is open. */
  | 'E_LOGIN_REQUIRED'
  | 'E_COMMAND_NOT_FOUND'
  | 'E_TIMEOUT'
  | 'E_SCHEDULER_UNAVAILABLE'
  | 'E_SUBMIT_FAILED'
  /** The target refused the job as submitted: the submitter's to fix (failure kind `submission`). */
  | 'E_SUBMIT_REFUSED'
  | 'E_CANCEL_FAILED'
  | 'E_NO_SUCH_JOB'
  | 'E_AMBIGUOUS_JOB'
  | 'E_NO_SUCH_PROFILE'
  | 'E_PROFILE_EXISTS'
  | 'E_CORRUPT_RECORD'
  | 'E_UNTRUSTED_PATH'
  | 'E_STORE'
  | 'E_LOG_UNAVAILABLE'
  /** A job that is not terminal was asked to be forgotten without force. */
  | 'E_JOB_ACTIVE'
  /** The store or backend cannot do what was asked (an optional part of its contract). */
  | 'E_UNSUPPORTED'
  /** A job's settings are not in the ledger, so it cannot be submitted again as it was. */
  | 'E_SETTINGS_MISSING'
  /** A secret a job had is needed again (yonder never keeps them). */
  | 'E_SECRET_MISSING'
  /** A job's files on its target could not be removed. */
  | 'E_CLEANUP_FAILED'
  /** A job's target could not be reached for longer than the caller would wait. */
  | 'E_TARGET_UNREACHABLE'
  /** The editor a front end started for the user failed. */
  | 'E_EDITOR_FAILED'
  /** A server a front end starts (the web view) could not listen on its port (taken, not allowed). */
  | 'E_LISTEN_FAILED'
  | 'E_USAGE'
  | 'E_INTERNAL';

export interface YonderErrorOptions {
  cause?: unknown;
  /**
   * What a program (or the CLI, for its own hints) may want beside the message, e.g.
   * `{ profile: 'gpu', profiles: ['local'] }` for `E_NO_SUCH_PROFILE`. Never advice for a
   * particular front end: the message says what is wrong, the front end says what to type.
   */
  data?: JsonObject;
}

/**
 * The one base class of every error yonder throws on purpose. `code` is stable; `message` is
 * for people and names no command of any front end. Each class has its own marker
 * (`Symbol.for('yonder.error.<Name>')`, the base `Symbol.for('yonder.error')`), so its
 * `isInstance` works across duplicated copies of core, and never takes a base for a
 * subclass, nor one subclass for another (vercel/ai's `ai-sdk-error.ts`).
 */
export class YonderError extends Error {
  readonly [symbol] = true;
  readonly code: YonderErrorCode;
  /** Structured facts about the error (see `YonderErrorOptions.data`); `{}` when none. */
  readonly data: Readonly<JsonObject>;

  constructor(code: YonderErrorCode, message: string, options: YonderErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'YonderError';
    this.code = code;
    this.data = options.data ?? {};
  }

  /** Whether `value` is a YonderError (of any class), from this copy of core or another. */
  static isInstance(value: unknown): value is YonderError {
    return YonderError.hasMarker(value, MARKER);
  }

  /**
   * Whether `value` carries the marker `Symbol.for(marker)`, which a class sets on its
   * instances and its subclasses' instances only.
   */
  protected static hasMarker(value: unknown, marker: string): boolean {
    const key = Symbol.for(marker);
    return (
      typeof value === 'object' &&
      value !== null &&
      key in value &&
      (value as Record<symbol, unknown>)[key] === true
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
  const text = getErrorMessage(error);
  return new YonderError(code, context ? `${context}: ${text}` : text, { cause: error });
}
