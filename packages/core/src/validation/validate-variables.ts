/** The check of an object of environment variables (a job's env or secrets, a container's env): names and values, as dot-path issues. */
import type { ValidationIssue } from '../errors/validation-error.js';
import { isReservedKey } from './reserved-keys.js';
import { ENV_NAME_PATTERN } from './validate-fields.js';

/** Every problem with `value` as `NAME: value` strings, each named by its dot path. */
export function checkVariables(value: unknown, path: string): ValidationIssue[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ path, message: 'must be an object of NAME: value strings' }];
  }
  const issues: ValidationIssue[] = [];
  for (const [name, item] of Object.entries(value)) {
    if (isReservedKey(name)) {
      issues.push({ path: `${path}.${name}`, message: 'is a reserved name; use another' });
      continue;
    }
    if (!ENV_NAME_PATTERN.test(name)) {
      issues.push({
        path: `${path}.${name}`,
        message: 'is not a valid variable name (letters, digits, "_"; not starting with a digit)',
      });
    }
    if (typeof item !== 'string')
      issues.push({ path: `${path}.${name}`, message: 'must be a string' });
    else if (item.includes('\0'))
      issues.push({ path: `${path}.${name}`, message: 'may not contain a NUL character' });
  }
  return issues;
}
