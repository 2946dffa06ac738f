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
  createSlurmBackend,
  MIN_SLURM_VERSION,
  reconcile,
  SLURM_BACKEND_ID,
  sbatchOptions,
  slurmJobName,
} from './slurm-backend.js';
export { type SlurmOptions, SlurmOptionsSchema } from './slurm-options.js';

import type { PluginV1 } from '@yonder/core';
import { createSlurmBackend as slurm } from './slurm-backend.js';

/** The plugin entry the CLI loads by package name: the slurm backend. */
export function createYonderPlugin(): PluginV1 {
  return { specificationVersion: 'v1', backends: [slurm()] };
}

/** This package's version. */
export const VERSION: string = '0.1.0';
