/** The user's config file: where it is, what it may hold, and how it is read (checked, bounded, strict). */
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Type, ValidationError, YonderError } from '@yonder/core';
import { checkSchema, checkTrustedPath, parseJson, readInputFile } from '@yonder/core/backend-kit';

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
    retention: Type.Optional(
      Type.String({
        pattern: '^[0-9]+[smhdw]?$',
        description:
          'How long finished jobs are kept: `yonder prune` without --older-than forgets those that ended longer ago (30d, 12h, 2w…).',
      }),
    ),
    store: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'The ledger: a PostgreSQL URL (postgresql://ROLE@HOST/DATABASE, or postgresql:///DATABASE?host=/run/postgresql for the Unix socket) for a team ledger, without a password; absent for the file ledger. YONDER_STORE overrides it.',
      }),
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
  /** How long finished jobs are kept (`30d`), for `yonder prune`; null when not set. */
  retention: string | null;
  /** The ledger's URL when it is not the file ledger; null when not set. */
  store: string | null;
}

/** Where the config lives: `YONDER_CONFIG`, else `$XDG_CONFIG_HOME/yonder/config.json`, else `~/.config/yonder/config.json`. */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.YONDER_CONFIG?.trim()) return resolve(env.YONDER_CONFIG.trim());
  const base = env.XDG_CONFIG_HOME?.trim()
    ? resolve(env.XDG_CONFIG_HOME.trim())
    : join(homedir(), '.config');
  return join(base, 'yonder', 'config.json');
}

/** The largest config file read. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Read the user's config. A missing file is an empty config (unless YONDER_CONFIG names it);
 * an unreadable or invalid one is an error naming the file and the field. The file and its
 * directory (which plugins are loaded from) are checked before either is used: each must be
 * the user's (or root's) and writable by no one else, as must every directory above them.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH`; YonderError `E_INVALID_CONFIG`.
 */
export function readConfig(env: NodeJS.ProcessEnv): UserConfig {
  const path = configPath(env);
  const directory = dirname(path);
  const trust = { allowRootOwner: true } as const;
  if (!checkTrustedPath(path, { ...trust, role: 'the yonder config', type: 'file' })) {
    if (env.YONDER_CONFIG?.trim()) {
      throw new YonderError(
        'E_INVALID_CONFIG',
        `Cannot read the yonder config ${path}: it does not exist.`,
      );
    }
    return { path: null, directory, plugins: [], retention: null, store: null };
  }
  checkTrustedPath(directory, {
    ...trust,
    role: 'the directory of the yonder config',
    type: 'directory',
  });
  let text: string;
  try {
    text = readInputFile(path, MAX_CONFIG_BYTES);
  } catch (error) {
    throw new YonderError(
      'E_INVALID_CONFIG',
      `Cannot read the yonder config: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const parsed = parseJson(text);
  if (!parsed.ok) {
    if (parsed.syntax) {
      throw new YonderError(
        'E_INVALID_CONFIG',
        `The yonder config ${path} ${parsed.issues[0]?.message ?? 'is not valid JSON'}`,
      );
    }
    throw new ValidationError(
      'E_INVALID_CONFIG',
      `The yonder config ${path} is invalid`,
      parsed.issues,
    );
  }
  const value = parsed.value;
  const issues = checkSchema(ConfigSchema, value);
  if (issues.length > 0)
    throw new ValidationError('E_INVALID_CONFIG', `The yonder config ${path} is invalid`, issues);
  const plugins = ((value as { plugins?: unknown[] }).plugins ?? []).map((entry) =>
    typeof entry === 'string'
      ? { package: entry, options: {} }
      : { package: (entry as PluginEntry).package, options: (entry as PluginEntry).options ?? {} },
  );
  const retention = (value as { retention?: string }).retention ?? null;
  const store = (value as { store?: string }).store ?? null;
  return { path, directory, plugins, retention, store };
}
