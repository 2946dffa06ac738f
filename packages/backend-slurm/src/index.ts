/** The package's public names: the Slurm backend, its options, and the parsers of Slurm's output. */
export {
  parseExitCode,
  parseMinJobAge,
  parseSacct,
  parseSbatchId,
  parseSlurmVersion,
  parseSqueue,
  type SacctRow,
  type SqueueRow,
  slurmObservation,
} from './parse.js';
export {
  type QueryFailure,
  reconcile,
  type SlurmEvidence,
  type WrapperFiles,
} from './reconcile.js';
export { sbatchOptions, slurmJobName } from './sbatch-options.js';
export {
  createSlurmBackend,
  SLURM_BACKEND_ID,
  type SlurmBackendSettings,
} from './slurm-backend.js';
export { type SlurmOptions, SlurmOptionsSchema } from './slurm-options.js';
export { MIN_SLURM_VERSION } from './slurm-probe.js';

import type { PluginV1 } from '@yonder/core';
import { createSlurmBackend as slurm } from './slurm-backend.js';

/** The plugin entry the CLI loads by package name: the slurm backend. */
export function createYonderPlugin(): PluginV1 {
  return { specificationVersion: 'v1', backends: [slurm()] };
}

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
