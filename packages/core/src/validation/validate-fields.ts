import type { ValidationIssue } from '../errors/validation-error.js';
import { YonderError } from '../errors/yonder-error.js';

/** Hosts and ssh config aliases: no spaces, quotes or shell syntax, and no leading `-`. */
export const HOST_PATTERN = /^[A-Za-z0-9_.@:[\]%-]+$/;
/** Profile names: a letter or digit first, then letters, digits, space, `.`, `_`, `-`; at most 64. */
export const PROFILE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_. -]{0,63}$/;
/** Identifiers handed back by schedulers. */
export const EXTERNAL_ID_PATTERN = /^[A-Za-z0-9_.:+-]+$/;
/** Environment variable names. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Plugin ids. */
export const PLUGIN_ID_PATTERN = /^[a-z][a-z0-9-]{0,63}$/;

/** No NUL, no line breaks: one field must stay one field on the far side. */
export function checkText(
  value: unknown,
  path: string,
  options: { allowEmpty?: boolean; maxLength?: number } = {},
): ValidationIssue[] {
  if (typeof value !== 'string') return [{ path, message: 'must be a string' }];
  if (!value.trim() && !options.allowEmpty)
    return [{ path, message: 'is required and may not be blank' }];
  if (/[\0\r\n]/.test(value))
    return [{ path, message: 'may not contain a newline or a NUL character' }];
  if (options.maxLength !== undefined && value.length > options.maxLength) {
    return [{ path, message: `may be at most ${options.maxLength} characters long` }];
  }
  return [];
}

/** An absolute POSIX path, safe to place in a remote command or a scheduler directive. */
export function checkAbsolutePath(value: unknown, path: string): ValidationIssue[] {
  const issues = checkText(value, path);
  if (issues.length > 0) return issues;
  if (!(value as string).startsWith('/')) {
    return [
      { path, message: `must be an absolute path (starting with "/"), got "${value as string}"` },
    ];
  }
  return [];
}

/** A host name or ssh alias. */
export function checkHost(value: unknown, path: string): ValidationIssue[] {
  const issues = checkText(value, path);
  if (issues.length > 0) return issues;
  const host = value as string;
  if (host.startsWith('-'))
    return [{ path, message: 'may not begin with "-" (it would be read as an option)' }];
  if (!HOST_PATTERN.test(host)) {
    return [{ path, message: 'may contain only letters, digits and . _ - @ : [ ] %' }];
  }
  return [];
}

/** Remove a trailing slash from a path, keeping "/" as it is. */
export function trimTrailingSlash(path: string): string {
  return path.replace(/\/+$/, '') || '/';
}

export interface ExternalId {
  id: string;
  /** The cluster of Slurm's `id;cluster` answer, if there was one. */
  cluster: string | null;
}

/**
 * Validate an id a scheduler handed back before it is stored or put in another command:
 * no leading `-`, only `[A-Za-z0-9_.:+-]`, at most 256 characters. With `allowCluster`,
 * Slurm's `id;cluster` form is split and both halves are checked.
 * @throws YonderError `E_UNSAFE_VALUE` quoting what was returned.
 */
export function parseExternalId(
  value: string,
  options: { allowCluster?: boolean } = {},
): ExternalId {
  const raw = value.trim();
  let id = raw;
  let cluster: string | null = null;
  if (options.allowCluster && raw.includes(';')) {
    const at = raw.indexOf(';');
    id = raw.slice(0, at);
    cluster = raw.slice(at + 1);
    if (
      !cluster ||
      cluster.length > 256 ||
      cluster.startsWith('-') ||
      !EXTERNAL_ID_PATTERN.test(cluster)
    ) {
      throw new YonderError(
        'E_UNSAFE_VALUE',
        `The scheduler returned an unsafe cluster name: ${JSON.stringify(value)}.`,
      );
    }
  }
  if (!id || id.length > 256 || id.startsWith('-') || !EXTERNAL_ID_PATTERN.test(id)) {
    throw new YonderError(
      'E_UNSAFE_VALUE',
      `The scheduler returned an unsafe or empty job id: ${JSON.stringify(value.slice(0, 200))}.`,
    );
  }
  return { id, cluster };
}
