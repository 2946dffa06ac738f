import { homedir } from 'node:os';
import { isAbsolute, posix, relative, resolve, sep } from 'node:path';
import type { JsonValue } from '../json/json-value.js';

function expandHome(value: string): string {
  if (value === '~') return homedir();
  if (value.startsWith('~/')) return homedir() + value.slice(1);
  return value;
}

/**
 * Map one local path to its place under the remote root. A path outside the local root is
 * returned as it is: guessing a remote place for it would send the job somewhere nobody asked.
 */
export function mapPath(value: string, localRoot: string, remoteRoot: string): string {
  if (!localRoot) return value;
  const expanded = expandHome(value);
  if (!isAbsolute(expanded)) return value;
  const target = resolve(expanded);
  const root = resolve(expandHome(localRoot));
  const rest = relative(root, target);
  if (rest === '') return remoteRoot;
  if (rest === '..' || rest.startsWith(`..${sep}`) || isAbsolute(rest)) return value;
  return posix.join(remoteRoot, ...rest.split(sep));
}

/**
 * Rewrite every absolute path string below `localRoot`, at any depth of a settings object,
 * to the same place below `remoteRoot`. Keys are never rewritten (setting names are not
 * paths), and strings that are not absolute paths stay as they are.
 */
export function mapSettingsPaths<T extends JsonValue>(
  value: T,
  localRoot: string,
  remoteRoot: string,
): T {
  if (!localRoot) return value;
  if (typeof value === 'string') return mapPath(value, localRoot, remoteRoot) as T;
  if (Array.isArray(value))
    return value.map((item) => mapSettingsPaths(item, localRoot, remoteRoot)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [key, item] of Object.entries(value))
      out[key] = mapSettingsPaths(item, localRoot, remoteRoot);
    return out as T;
  }
  return value;
}
