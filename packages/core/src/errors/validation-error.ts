import { YonderError, type YonderErrorCode } from './yonder-error.js';

/** One problem found by a validator: a dot-path to the field and what to do about it. */
export interface ValidationIssue {
  path: string;
  message: string;
}

/** Invalid input, with every problem found (not just the first). */
export class ValidationError extends YonderError {
  readonly issues: readonly ValidationIssue[];

  constructor(code: YonderErrorCode, subject: string, issues: readonly ValidationIssue[]) {
    const lines = issues.map((issue) =>
      issue.path ? `${issue.path}: ${issue.message}` : issue.message,
    );
    super(code, `${subject}:\n  ${lines.join('\n  ')}`);
    this.name = 'ValidationError';
    this.issues = issues;
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
