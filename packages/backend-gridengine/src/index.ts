/** The package's public names: the Grid Engine backend, its options, and the parsers of Grid Engine's output. */
export {
  createGridEngineBackend,
  GRIDENGINE_BACKEND_ID,
  type GridEngineBackendSettings,
} from './gridengine-backend.js';
export { type GridEngineOptions, GridEngineOptionsSchema } from './gridengine-options.js';
export { gridEngineJobName } from './gridengine-submit.js';
export {
  parseErrorReasons,
  parseGridEngineVersion,
  parseQacct,
  parseQstatXml,
  parseQsubId,
  type QacctRecord,
  type QstatRow,
  qacctObservation,
  qstatObservation,
} from './parse.js';

import type { PluginV1 } from '@yonder/core';
import { createGridEngineBackend as gridEngine } from './gridengine-backend.js';

/** The plugin entry the CLI loads by package name: the gridengine backend. */
export function createYonderPlugin(): PluginV1 {
  return { specificationVersion: 'v1', backends: [gridEngine()] };
}

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
