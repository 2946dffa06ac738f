/** Keys no input may create (`__proto__`, `constructor`, `prototype`) and the nesting limit of input. */
import type { ValidationIssue } from '../errors/validation-error.js';

/** Names that would reach or replace an object's prototype when used as a key. */
export const RESERVED_KEYS: readonly string[] = ['__proto__', 'constructor', 'prototype'];

/** How deep JSON input may nest (objects and arrays), settings, records and config alike. */
export const MAX_JSON_DEPTH = 64;

/** Whether `key` is one of the names no input may create. */
export function isReservedKey(key: string): boolean {
  return RESERVED_KEYS.includes(key);
}

/** A dot path for a message, the middle of a very deep one left out. */
function shortPath(parts: readonly string[]): string {
  if (parts.length <= 12) return parts.join('.');
  return [...parts.slice(0, 6), `…(${parts.length - 10} more)…`, ...parts.slice(-4)].join('.');
}

/**
 * Every reserved key in a parsed value, and the first place it nests deeper than `maxDepth`,
 * as dot paths under `prefix`. Walks without recursion, so any depth is safe to check.
 */
export function checkPlainData(
  value: unknown,
  prefix: string,
  maxDepth: number = MAX_JSON_DEPTH,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  // A node's path is its parent's node and its key, spelled out only for a message: checking a
  // large ledger walks every key of every record, and most records have nothing to report.
  interface Step {
    value: unknown;
    parent: Step | null;
    key: string;
    depth: number;
  }
  const pathOf = (step: Step | null, key?: string): string[] => {
    const parts: string[] = key === undefined ? [] : [key];
    for (let at = step; at; at = at.parent) if (at.parent || prefix) parts.unshift(at.key);
    return parts;
  };
  const stack: Step[] = [{ value, parent: null, key: prefix, depth: 0 }];
  let tooDeep = false;
  while (stack.length > 0) {
    const step = stack.pop() as Step;
    const node = step.value;
    if (typeof node !== 'object' || node === null) continue;
    if (step.depth >= maxDepth) {
      if (!tooDeep) {
        issues.push({
          path: shortPath(pathOf(step)),
          message: `nests deeper than ${maxDepth} levels of objects and lists; flatten it`,
        });
        tooDeep = true;
      }
      continue;
    }
    for (const key of Object.keys(node)) {
      if (isReservedKey(key)) {
        issues.push({
          path: shortPath(pathOf(step, key)),
          message: `"${key}" is a reserved name and may not be used as a key (${RESERVED_KEYS.join(', ')})`,
        });
        continue;
      }
      const child = (node as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null)
        stack.push({ value: child, parent: step, key, depth: step.depth + 1 });
    }
  }
  return issues;
}
