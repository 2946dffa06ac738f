/** Fresh directories below no directory that others can write, for tests that install plugins. */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * A new directory under `~/.cache/yonder-tests` (made 0700), never below /tmp: yonder refuses a
 * plugin installed below a directory all may write to, since another user could create a
 * `node_modules` there that the plugin's imports would resolve from. The caller removes it.
 */
export function privateTempDir(prefix: string): string {
  const base = join(homedir(), '.cache', 'yonder-tests');
  mkdirSync(base, { recursive: true, mode: 0o700 });
  return mkdtempSync(join(base, `${prefix}-`));
}
