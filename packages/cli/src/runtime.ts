/** The CLI's wiring: the ledger (the file ledger unless YONDER_STORE or the config names another), the built-in local pieces, and backends and transports loaded on demand from their packages or the config's plugins. */
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type BackendV1,
  createLocalBackend,
  createLocalTransport,
  createRegistry,
  JobManager,
  NoSuchPluginError,
  type Registry,
  registerPlugin,
  type TransportFactoryV1,
  toYonderError,
} from '@yonder/core';
import type { PluginKind } from '@yonder/core/backend-kit';
import { createFsStore, resolveStateDirectory } from '@yonder/store-fs';
import { readConfig, type UserConfig } from './plugins/config.js';
import {
  findPackage,
  globalModuleDirectories,
  type OwnResolution,
  packageVersion,
} from './plugins/resolve-package.js';
import { chooseStore, openStore, type StoreChoice } from './store-choice.js';

/** The packages yonder ships besides the CLI, and what they provide; installed separately. */
export const BUNDLED_PLUGINS: ReadonlyArray<{
  package: string;
  backends: string[];
  transports: string[];
}> = [
  { package: '@yonder/backend-ssh', backends: ['ssh'], transports: ['ssh', 'ssh2', 'openssh'] },
  { package: '@yonder/backend-slurm', backends: ['slurm'], transports: [] },
  { package: '@yonder/backend-command', backends: ['command'], transports: [] },
  { package: '@yonder/backend-gridengine', backends: ['gridengine'], transports: [] },
];

/** The outcome of loading one plugin package. */
export type PluginStatus =
  | { package: string; source: 'bundled' | 'config'; ok: true; version: string; path: string }
  | { package: string; source: 'bundled' | 'config'; ok: false; error: string; missing: boolean };

export interface Runtime {
  manager: JobManager;
  registry: Registry;
  stateDirectory: string;
  /** Which ledger is in use: the file ledger, or the one YONDER_STORE or the config's `store` names. */
  storeChoice: StoreChoice;
  /** The backend a profile names, loading its package (or the config's plugins) when needed. */
  ensureBackend(id: string): Promise<BackendV1>;
  /** The transport a profile uses, found the same way as its backend. */
  ensureTransport(id: string): Promise<TransportFactoryV1>;
  /** Load every installed bundled package and every plugin of the config. */
  loadAll(): Promise<PluginStatus[]>;
  /**
   * A package of the CLI's own installation that is no plugin (as @yonder/ui), found and
   * checked as the bundled plugins are, imported; null when it is not installed there.
   * @throws UntrustedPathError `E_UNTRUSTED_PATH` when what is found could be someone else's.
   */
  importOwn(name: string): Promise<Record<string, unknown> | null>;
}

const CLI_DIRECTORY = dirname(fileURLToPath(import.meta.url));

/** The bundled packages are found by Node's own resolution from this module, where the runtime has it. */
const OWN_RESOLUTION: OwnResolution | undefined =
  typeof import.meta.resolve === 'function'
    ? { directory: CLI_DIRECTORY, resolve: (specifier) => import.meta.resolve(specifier) }
    : undefined;

/**
 * Wire the defaults: the file ledger, the local backend and transport; other backends and
 * transports load on demand from their packages, and third-party plugins from the user's config file (resolved
 * from the config's directory, then from the global install). A plugin that fails to load
 * is reported where it matters and breaks nothing else.
 */
export function createRuntime(env: NodeJS.ProcessEnv): Runtime {
  const stateDirectory = resolveStateDirectory(env);
  const registry = createRegistry({
    backends: [createLocalBackend()],
    transports: { local: () => createLocalTransport() },
    stores: { fs: ({ location }) => createFsStore({ location }) },
  });
  for (const bundled of BUNDLED_PLUGINS) {
    for (const id of bundled.backends)
      registry.hint('backend', id, `Install it with: npm install ${bundled.package}`);
    for (const id of bundled.transports)
      registry.hint('transport', id, `Install it with: npm install ${bundled.package}`);
  }
  const statuses = new Map<string, PluginStatus>();
  let config: UserConfig | null = null;

  const load = async (
    name: string,
    source: 'bundled' | 'config',
    options: Record<string, unknown>,
    from: string[],
  ): Promise<PluginStatus> => {
    const known = statuses.get(name);
    if (known) return known;
    let status: PluginStatus;
    try {
      // Found where someone else could have put it, unresolvable, or failing as it loads:
      // reported, never loaded, and nothing else stops.
      const found = await findPackage(name, {
        from,
        global: globalModuleDirectories(env),
        ownDirectory: CLI_DIRECTORY,
        own: OWN_RESOLUTION,
        env,
      });
      if (!found) {
        status = {
          package: name,
          source,
          ok: false,
          missing: true,
          error: `the package is not installed (looked from ${from.join(', ')} and the global node_modules)`,
        };
      } else {
        const module = (await import(pathToFileURL(found.entry).href)) as Record<string, unknown>;
        const version = packageVersion(found.dir);
        registerPlugin(registry, module, { package: name, version }, options);
        status = { package: name, source, ok: true, version, path: found.dir };
      }
    } catch (error) {
      status = {
        package: name,
        source,
        ok: false,
        missing: false,
        error: toYonderError(error).message,
      };
    }
    statuses.set(name, status);
    return status;
  };

  const loadConfig = async (): Promise<void> => {
    config ??= readConfig(env);
    for (const entry of config.plugins)
      await load(entry.package, 'config', entry.options, [config.directory]);
  };

  const loadBundled = (name: string): Promise<PluginStatus> =>
    load(name, 'bundled', {}, [CLI_DIRECTORY]);

  const has = (list: 'backends' | 'transports', id: string): boolean =>
    registry.list()[list].some((entry) => entry.id === id);

  const failures = (): string =>
    [...statuses.values()]
      .filter(
        (status): status is Extract<PluginStatus, { ok: false }> => !status.ok && !status.missing,
      )
      .map((status) => ` Plugin ${status.package} failed to load: ${status.error}`)
      .join('');

  /**
   * Make a backend or transport available: from the bundled package known to provide it, then
   * from the config's plugins. Not found anywhere: every bundled package is loaded, so the
   * error lists all that is available and names the package to install.
   */
  const ensure = async (kind: Extract<PluginKind, 'backend' | 'transport'>, id: string) => {
    const list = kind === 'backend' ? 'backends' : 'transports';
    if (has(list, id)) return;
    const bundled = BUNDLED_PLUGINS.find((entry) => entry[list].includes(id));
    if (bundled) await loadBundled(bundled.package);
    if (!has(list, id)) await loadConfig();
    if (has(list, id)) return;
    for (const entry of BUNDLED_PLUGINS) await loadBundled(entry.package);
    const available = registry.list()[list].map((entry) => entry.id);
    const hint = bundled
      ? `Install it with: npm install ${bundled.package}.`
      : 'Name the package that provides it in your yonder config (plugins).';
    throw new NoSuchPluginError(kind, id, available, `${hint}${failures()}`);
  };

  const ensureBackend = async (id: string): Promise<BackendV1> => {
    await ensure('backend', id);
    return registry.backend(id);
  };

  const ensureTransport = async (id: string): Promise<TransportFactoryV1> => {
    await ensure('transport', id);
    return registry.transport(id);
  };

  const importOwn = async (name: string): Promise<Record<string, unknown> | null> => {
    const found = await findPackage(name, {
      from: [CLI_DIRECTORY],
      ownDirectory: CLI_DIRECTORY,
      own: OWN_RESOLUTION,
      env,
    });
    return found
      ? ((await import(pathToFileURL(found.entry).href)) as Record<string, unknown>)
      : null;
  };

  const storeChoice = chooseStore(env, stateDirectory);
  const manager = new JobManager({
    store: openStore(storeChoice, (name) => importOwn(name)),
    registry,
    stateDirectory,
    resolveBackend: (id) => ensureBackend(id),
    resolveTransport: (id) => ensureTransport(id),
  });

  return {
    manager,
    registry,
    stateDirectory,
    storeChoice,
    ensureBackend,
    ensureTransport,
    async loadAll() {
      for (const entry of BUNDLED_PLUGINS) await loadBundled(entry.package);
      await loadConfig();
      return [...statuses.values()];
    },
    importOwn,
  };
}
