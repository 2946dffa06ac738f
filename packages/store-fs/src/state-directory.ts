import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { YonderError } from '@yonder/core';

/**
 * The path an environment variable names, when it names one: refused when relative (a ledger
 * per working directory, silently) or holding a line break (it would cut the job directory
 * recorded in the line-based files the jobs' wrappers read and write).
 */
function directoryFrom(env: NodeJS.ProcessEnv, variable: string): string | undefined {
  const value = env[variable];
  if (value === undefined || value.trim() === '') return undefined;
  if (/[\n\r]/.test(value))
    throw new YonderError(
      'E_INVALID_CONFIG',
      `${variable} holds a line break (${JSON.stringify(value)}); set it to an absolute path without one.`,
      { data: { variable } },
    );
  const path = value.trim();
  if (!isAbsolute(path))
    throw new YonderError(
      'E_INVALID_CONFIG',
      `${variable} is a relative path (${JSON.stringify(value)}), which would make a ledger in every working directory; set it to an absolute path, e.g. ${variable}=${resolve(path)}.`,
      { data: { variable } },
    );
  return resolve(path);
}

/**
 * Where the ledger lives: `YONDER_STATE_DIR` if set, else `$XDG_STATE_HOME/yonder`,
 * else `~/.local/state/yonder`.
 * @throws YonderError `E_INVALID_CONFIG` naming the variable when the one used is a relative
 *   path or holds a line break.
 */
export function resolveStateDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const override = directoryFrom(env, 'YONDER_STATE_DIR');
  if (override) return override;
  const xdg = directoryFrom(env, 'XDG_STATE_HOME');
  if (xdg) return join(xdg, 'yonder');
  return join(homedir(), '.local', 'state', 'yonder');
}
