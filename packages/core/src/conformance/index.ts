export {
  type BackendConformanceOptions,
  backendConformance,
  type ConformanceHarness,
} from './backend-conformance.js';
export { sampleJob, type StoreConformanceOptions, storeConformance } from './store-conformance.js';
export type { TestFunction } from './types.js';
