/** The one entry point for programs: a ready JobManager over the file ledger, with the built-in local backend, the bundled backends on demand and the plugins of the user's config. */
import { resolve } from 'node:path';
import type { JobManager, Registry } from '@yonder/core';
import { createRuntime, type PluginStatus } from './runtime.js';

export interface CreateYonderOptions {
  /** The ledger's directory. Default: `$YONDER_STATE_DIR`, else `$XDG_STATE_HOME/yonder`, else `~/.local/state/yonder`. */
  stateDir?: string;
  /** The config file naming plugins. Default: `$YONDER_CONFIG`, else `$XDG_CONFIG_HOME/yonder/config.json`. */
  configFile?: string;
  /** The environment the defaults above are read from. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

export interface Yonder {
  /** Submit, list, status, wait, logs, follow, cancel and watch: the same ledger the CLI uses. */
  readonly manager: JobManager;
  readonly registry: Registry;
  readonly stateDirectory: string;
  /** Load every installed bundled backend and every plugin of the config; report each. */
  plugins(): Promise<PluginStatus[]>;
  /** Release connections. */
  close(): Promise<void>;
}

/**
 * Wire yonder as the CLI does, for a program (a GUI, a pipeline). Backends a profile names are
 * loaded when first needed, so creating one is cheap.
 */
export function createYonder(options: CreateYonderOptions = {}): Yonder {
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env) };
  // A relative directory given here is the program's own choice: taken from its working directory.
  if (options.stateDir !== undefined) env.YONDER_STATE_DIR = resolve(options.stateDir);
  if (options.configFile !== undefined) env.YONDER_CONFIG = options.configFile;
  const runtime = createRuntime(env);
  return {
    manager: runtime.manager,
    registry: runtime.registry,
    stateDirectory: runtime.stateDirectory,
    plugins: () => runtime.loadAll(),
    close: () => runtime.manager.close(),
  };
}
