import {
  type BackendV1,
  createLocalBackend,
  createLocalTransport,
  createRegistry,
  JobManager,
  type Registry,
  YonderError,
} from '@yonder/core';
import { createFsStore, resolveStateDirectory } from '@yonder/store-fs';

/** Backends yonder ships as separate packages, loaded only when a profile asks for them. */
export const KNOWN_BACKEND_PACKAGES: Readonly<
  Record<string, { package: string; factory: string }>
> = {
  ssh: { package: '@yonder/backend-ssh', factory: 'createSshBackend' },
  slurm: { package: '@yonder/backend-slurm', factory: 'createSlurmBackend' },
  command: { package: '@yonder/backend-command', factory: 'createCommandBackend' },
};

const TRANSPORT_PACKAGES: Readonly<Record<string, { package: string; factory: string }>> = {
  ssh: { package: '@yonder/backend-ssh', factory: 'createSshTransport' },
};

async function importOptional(name: string): Promise<Record<string, unknown> | null> {
  try {
    return (await import(name)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(name))
      return null;
    throw new YonderError('E_INTERNAL', `Could not load ${name}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

export interface Runtime {
  manager: JobManager;
  registry: Registry;
  stateDirectory: string;
  /** Make sure the backend (and its transport) a profile names is registered, loading its package if needed. */
  ensureBackend(id: string, needsSsh?: boolean): Promise<BackendV1>;
}

/** Wire the defaults: the file ledger, the local backend and transport, known packages on demand. */
export function createRuntime(env: NodeJS.ProcessEnv): Runtime {
  const stateDirectory = resolveStateDirectory(env);
  const registry = createRegistry({
    backends: [createLocalBackend()],
    transports: { local: () => createLocalTransport() },
    stores: { fs: ({ location }) => createFsStore({ location }) },
  });
  for (const [id, entry] of Object.entries(KNOWN_BACKEND_PACKAGES)) {
    registry.hint('backend', id, `Install it with: npm install ${entry.package}`);
  }
  for (const [id, entry] of Object.entries(TRANSPORT_PACKAGES)) {
    registry.hint('transport', id, `Install it with: npm install ${entry.package}`);
  }
  const store = createFsStore({ location: stateDirectory });
  const loaded = new Set<string>();

  const ensureTransport = async (id: string): Promise<void> => {
    const entry = TRANSPORT_PACKAGES[id];
    if (!entry || loaded.has(`transport:${id}`)) return;
    loaded.add(`transport:${id}`);
    const module = await importOptional(entry.package);
    const factory = module?.[entry.factory];
    if (typeof factory === 'function') registry.addTransport(id, (profile) => factory({ profile }));
  };

  /** Register a known backend package if it is installed; whether it is now registered. */
  const loadKnown = async (id: string): Promise<boolean> => {
    const entry = KNOWN_BACKEND_PACKAGES[id];
    if (!entry) return false;
    if (loaded.has(`backend:${id}`))
      return registry.list().backends.some((backend) => backend.id === id);
    loaded.add(`backend:${id}`);
    const module = await importOptional(entry.package);
    const factory = module?.[entry.factory];
    if (typeof factory !== 'function') return false;
    registry.addBackend(factory() as BackendV1, {
      package: entry.package,
      version: String(module?.VERSION ?? '?'),
    });
    return true;
  };

  const ensureBackend = async (id: string, needsSsh = false): Promise<BackendV1> => {
    if (needsSsh) await ensureTransport('ssh');
    try {
      return registry.backend(id);
    } catch (error) {
      if (!KNOWN_BACKEND_PACKAGES[id]) {
        // Unknown id: load every installed package, so the error lists all that is available.
        for (const known of Object.keys(KNOWN_BACKEND_PACKAGES)) await loadKnown(known);
        return registry.backend(id);
      }
      if (!(await loadKnown(id))) throw error;
      return registry.backend(id);
    }
  };
  const manager = new JobManager({
    store,
    registry,
    stateDirectory,
    resolveBackend: (id, profile) => ensureBackend(id, Boolean(profile.host)),
  });
  return { manager, registry, stateDirectory, ensureBackend };
}
