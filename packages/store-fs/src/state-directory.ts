import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Where the ledger lives: `YONDER_STATE_DIR` if set, else `$XDG_STATE_HOME/yonder`,
 * else `~/.local/state/yonder`.
 */
export function resolveStateDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.YONDER_STATE_DIR?.trim();
  if (override) return resolve(override);
  const xdg = env.XDG_STATE_HOME?.trim();
  if (xdg) return join(resolve(xdg), 'yonder');
  return join(homedir(), '.local', 'state', 'yonder');
}
