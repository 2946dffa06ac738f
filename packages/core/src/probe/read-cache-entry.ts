/** A cache entry yonder wrote in one of its private directories, read back as JSON: nothing when it is absent, not the user's own, too large or not JSON. */
import { parseJson } from '../json/parse-json.js';
import { readPrivateFile } from '../trust/private-files.js';

/**
 * The JSON value in the cache file `file`, or null: absent, a link, another owner's, larger
 * than `maxBytes` or not JSON (a cache only saves time, so what is not ours is not used).
 */
export function readCacheEntry(file: string, maxBytes: number): unknown {
  let text: string | undefined;
  try {
    text = readPrivateFile(file, maxBytes);
  } catch {
    return null;
  }
  if (text === undefined) return null;
  const parsed = parseJson(text);
  return parsed.ok ? parsed.value : null;
}
