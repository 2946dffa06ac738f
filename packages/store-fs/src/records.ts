/** How the file ledger reads its records back: size-bounded, schema-checked, each named by its path when it fails. */
import {
  CorruptRecordError,
  type JobRecord,
  type Profile,
  UntrustedPathError,
  type ValidationIssue,
  YonderError,
} from '@yonder/core';
import { parseJson, validateJobRecord, validateProfileFields } from '@yonder/core/backend-kit';

/** Job ids as the ledger names its files. */
export const JOB_ID = /^[0-9a-f]{6,64}$/;
/** The largest job record read (argv and environment may be long, but not this long). */
export const MAX_RECORD_BYTES = 8 * 1024 * 1024;
/** The largest settings file read back (a submit takes at most 1 MiB; mapping may add a little). */
export const MAX_SETTINGS_FILE_BYTES = 2 * 1024 * 1024;

/** Where a job's settings are kept: beside its record, `<id>.settings` (never a `.json` a listing reads). */
export function settingsPath(recordPath: string): string {
  return `${recordPath.slice(0, -'.json'.length)}.settings`;
}

/** Room set aside, per active job, so that what happened to it can be recorded on a full disk. */
export function recordSpare(path: string): string {
  const at = path.lastIndexOf('/');
  return `${path.slice(0, at)}/.${path.slice(at + 1)}.spare`;
}

/** The largest profile read. */
export const MAX_PROFILE_BYTES = 1024 * 1024;

/** Whether a file system failure (or the ledger's error made of one) is a full disk or quota. */
export function isDiskFull(error: unknown): boolean {
  const cause = YonderError.isInstance(error) ? error.cause : error;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** A file system failure as the ledger reports it: what, where, and what to do. */
export function storeError(action: string, path: string, error: unknown): YonderError {
  if (YonderError.isInstance(error)) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const hint = isDiskFull(error)
    ? ' The disk is full; free space and try again.'
    : code === 'EROFS' || code === 'EACCES' || code === 'EPERM'
      ? ' The state directory is not writable; fix its permissions or set YONDER_STATE_DIR.'
      : '';
  return new YonderError(
    'E_STORE',
    `Could not ${action} ${path}: ${(error as Error).message}.${hint}`,
    { cause: error },
  );
}

/** The file name (without .json) of a profile. */
export function profileKey(name: string): string {
  return encodeURIComponent(name.toLowerCase());
}

function describeIssues(issues: readonly ValidationIssue[]): string {
  const shown = issues
    .slice(0, 3)
    .map((issue) => (issue.path ? `${issue.path} ${issue.message}` : issue.message));
  return `${shown.join('; ')}${issues.length > 3 ? `; and ${issues.length - 3} more` : ''}`;
}

function parse(path: string, text: string): unknown {
  const parsed = parseJson(text);
  if (parsed.ok) return parsed.value;
  throw new CorruptRecordError(path, describeIssues(parsed.issues));
}

/**
 * A job record from its file's text: valid JSON, valid against the record schema, and holding
 * the id its file is named for (a record copied under another name never acts on that job).
 * @throws CorruptRecordError naming the path and what is wrong.
 */
export function parseJobText(path: string, text: string, id: string): JobRecord {
  const value = parse(path, text);
  const issues = validateJobRecord(value, { plainDataChecked: true });
  if (issues.length > 0)
    throw new CorruptRecordError(path, `not a valid job record: ${describeIssues(issues)}`);
  const job = value as JobRecord;
  if (job.id !== id) {
    throw new CorruptRecordError(
      path,
      `it holds the job ${JSON.stringify(job.id)}, not ${id}, whose file it is`,
    );
  }
  return job;
}

/**
 * A profile from its file's text: valid JSON, a valid profile, saved under its own name.
 * @throws CorruptRecordError naming the path and what is wrong.
 */
export function parseProfileText(path: string, text: string, key: string): Profile {
  const value = parse(path, text);
  const issues = validateProfileFields(value);
  if (issues.length > 0)
    throw new CorruptRecordError(path, `not a valid profile: ${describeIssues(issues)}`);
  const profile = value as Profile;
  if (profileKey(profile.name) !== key) {
    throw new CorruptRecordError(
      path,
      `it holds the profile ${JSON.stringify(profile.name)}, not the one its file is named for`,
    );
  }
  return profile;
}

/** Where a record that could not be read lives, for the list of problems. */
export function problemLocation(error: unknown, fallback: string): string {
  if (CorruptRecordError.isInstance(error) && 'path' in error) return String(error.path);
  if (UntrustedPathError.isInstance(error)) return error.path;
  return fallback;
}

/** Newest first; ties by id, so the order is stable. */
export function byNewest(a: JobRecord, b: JobRecord): number {
  return a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1;
}
