/** How the CLI words an error for people: the library's message, and the CLI's own hints beside it (the command to run, the flag that sets a field), which no library message carries. */
import {
  CorruptRecordError,
  ValidationError,
  type ValidationIssue,
  type YonderError,
} from '@yonder/core';

/** The `yonder profile add` flag that sets each profile field whose issues it is worth naming. */
const PROFILE_FLAGS: Readonly<Record<string, string>> = {
  host: '--host',
  workdir: '--workdir',
  localRoot: '--local-root',
  remoteRoot: '--remote-root',
};

/** One issue of a profile, as `path: message`, with the flag that sets the field when there is one. */
export function issueText(issue: ValidationIssue): string {
  const text = issue.path ? `${issue.path}: ${issue.message}` : issue.message;
  const flag = PROFILE_FLAGS[issue.path];
  return flag ? `${text} (${flag})` : text;
}

/** What the CLI adds to an error's message: what to type next, from the error's code and data. */
function hint(error: YonderError): string | undefined {
  const { data } = error;
  if (error.code === 'E_PROFILE_EXISTS' && typeof data.profile === 'string')
    return `Add --force to replace it, or change it with: yonder profile edit ${data.profile}`;
  if (error.code === 'E_NO_SUCH_PROFILE' && typeof data.profile === 'string')
    return `Create one with: yonder profile add ${data.profile} --backend BACKEND`;
  if (CorruptRecordError.isInstance(error) && /\/profiles\/[^/]+\.json$/.test(error.path))
    return `Fix: correct that field in the file, or replace the profile (yonder profile add NAME --backend B --force), or forget it (yonder profile remove NAME).`;
  if (error.code === 'E_LOGIN_REQUIRED' && typeof data.profile === 'string')
    return `Run "yonder connect ${data.profile}" first (ssh asks there), then try again.`;
  if (error.code === 'E_STORE' && data.schema === 'older')
    return 'Run "yonder ledger migrate" as the database\'s owner.';
  if (error.code === 'E_STORE' && data.schema === 'newer')
    return 'Upgrade yonder (npm install -g @yonder/cli) to use this ledger.';
  if (error.code === 'E_NO_SUCH_JOB' && typeof data.reference === 'string')
    return '"yonder list --all" shows every job.';
  return undefined;
}

/** An error as the CLI prints it (after `yonder: `, or as the JSON envelope's message). */
export function errorText(error: YonderError): string {
  if (ValidationError.isInstance(error) && error.code === 'E_INVALID_PROFILE')
    return `${error.subject}:\n  ${error.issues.map(issueText).join('\n  ')}`;
  const extra = hint(error);
  return extra ? `${error.message} ${extra}` : error.message;
}
