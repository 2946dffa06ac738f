export {
  type BackendConformanceOptions,
  backendConformance,
  type ConformanceHarness,
} from './backend-conformance.js';
export { LOG_BYTES, LOG_LINES, printfFormat } from './log-conformance.js';
export { type StoreConformanceOptions, sampleJob, storeConformance } from './store-conformance.js';
export { type TransportConformanceOptions, transportConformance } from './transport-conformance.js';
export type { TestFunction } from './types.js';
