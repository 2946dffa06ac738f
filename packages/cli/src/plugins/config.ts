import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { getErrorMessage, Type, ValidationError, YonderError } from '@yonder/core';
import { checkSchema } from '@yonder/core/backend-kit';

const PluginEntrySchema = Type.Union([
  Type.String({ minLength: 1 }),
  Type.Object(
    {
      package: Type.String({ minLength: 1, description: 'The npm package name of the plugin.' }),
      options: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), {
          description: 'Passed to createYonderPlugin(options).',
        }),
      ),
    },
    { additionalProperties: false },
  ),
]);

/** The user's config file: which third-party plugins to load, with their options. */
export const ConfigSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    plugins: Type.Optional(
      Type.Array(PluginEntrySchema, { description: 'Plugins to load, by package name.' }),
    ),
  },
  { additionalProperties: false },
);

export interface PluginEntry {
  package: string;
  options: Record<string, unknown>;
}

export interface UserConfig {
  /** The file read, or null when there is none. */
  path: string | null;
  /** The directory plugins are resolved from first. */
  directory: string;
  plugins: PluginEntry[];
}

/** Where the config lives: `YONDER_CONFIG`, else `$XDG_CONFIG_HOME/yonder/config.json`, else `~/.config/yonder/config.json`. */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.YONDER_CONFIG?.trim()) return resolve(env.YONDER_CONFIG.trim());
  const base = env.XDG_CONFIG_HOME?.trim()
    ? resolve(env.XDG_CONFIG_HOME.trim())
    : join(homedir(), '.config');
  return join(base, 'yonder', 'config.json');
}

/**
 * Read the user's config. A missing file is an empty config (unless YONDER_CONFIG names it);
 * an unreadable or invalid one is an error naming the file and the field.
 */
export function readConfig(env: NodeJS.ProcessEnv): UserConfig {
  const path = configPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !env.YONDER_CONFIG?.trim()) {
      return { path: null, directory: dirname(path), plugins: [] };
    }
    throw new YonderError(
      'E_INVALID_CONFIG',
      `Cannot read the yonder config ${path}: ${getErrorMessage(error)}`,
      { cause: error },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new YonderError(
      'E_INVALID_CONFIG',
      `The yonder config ${path} is not valid JSON: ${getErrorMessage(error)}`,
      { cause: error },
    );
  }
  const issues = checkSchema(ConfigSchema, value);
  if (issues.length > 0)
    throw new ValidationError('E_INVALID_CONFIG', `The yonder config ${path} is invalid`, issues);
  const plugins = ((value as { plugins?: unknown[] }).plugins ?? []).map((entry) =>
    typeof entry === 'string'
      ? { package: entry, options: {} }
      : { package: (entry as PluginEntry).package, options: (entry as PluginEntry).options ?? {} },
  );
  return { path, directory: dirname(path), plugins };
}
