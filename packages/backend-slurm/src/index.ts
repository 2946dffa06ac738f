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

/** This package's version. */
export const VERSION: string = '0.1.0';
