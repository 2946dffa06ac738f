/** Invalid input reported with every problem found, as dot-path issues, and the helper that throws one when there are any. */
import { YonderError, type YonderErrorCode } from './yonder-error.js';

const NAME = 'ValidationError';
const MARKER = `yonder.error.${NAME}`;
const symbol = Symbol.for(MARKER);

/** One problem found by a validator: a dot-path to the field and what to do about it. */
export interface ValidationIssue {
  path: string;
  message: string;
}

/** Invalid input, with every problem found (not just the first). */
export class ValidationError extends YonderError {
  readonly [symbol] = true;
  /** What is invalid (`Profile "x" is invalid`): the message's first line. */
  readonly subject: string;
  readonly issues: readonly ValidationIssue[];

  constructor(code: YonderErrorCode, subject: string, issues: readonly ValidationIssue[]) {
    const lines = issues.map((issue) =>
      issue.path ? `${issue.path}: ${issue.message}` : issue.message,
    );
    super(code, `${subject}:\n  ${lines.join('\n  ')}`);
    this.name = NAME;
    this.subject = subject;
    this.issues = issues;
  }

  /** Whether `value` is a ValidationError, from this copy of core or another. */
  static override isInstance(value: unknown): value is ValidationError {
    return YonderError.hasMarker(value, MARKER);
  }
}

/** Throw a ValidationError if there are any issues. */
export function assertValid(
  code: YonderErrorCode,
  subject: string,
  issues: readonly ValidationIssue[],
): void {
  if (issues.length > 0) throw new ValidationError(code, subject, issues);
}
