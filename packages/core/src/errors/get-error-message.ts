/** The message of anything thrown, read one way everywhere. */

/**
 * The message of anything thrown: an error's `message` (from any realm), a string as it is,
 * anything else as text. Use it instead of `(error as Error).message`.
 */
export function getErrorMessage(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  if (
    typeof error === 'object' &&
    error !== null &&
    'message' in error &&
    typeof error.message === 'string'
  )
    return error.message;
  try {
    return String(error);
  } catch {
    // An object without a prototype has no toString.
    return Object.prototype.toString.call(error);
  }
}
