export type {
  AbsentObservationV1,
  BackendCapabilitiesV1,
  BackendContextV1,
  BackendJobV1,
  BackendV1,
  CancelOutcomeV1,
  FoundObservationV1,
  LogChunkV1,
  ObservationV1,
  ProbeReportV1,
  QueryFailedObservationV1,
  ReadLogOptionsV1,
  SubmitRequestV1,
  SubmitResultV1,
} from './backend/v1/backend-v1.js';
export {
  type FailureKind,
  type JobRecord,
  type JobSpec,
  type JobState,
  RESOURCE_NAMES,
  type ResourceName,
  type Resources,
  type Transition,
} from './job.js';
export type { PluginFactoryV1, PluginV1 } from './plugin/v1/plugin-v1.js';
export type { Profile } from './profile.js';
export type { StoreFactoryV1 } from './store/v1/store-factory-v1.js';
export type {
  LeaseV1,
  ListJobsOptionsV1,
  ListJobsResultV1,
  SaveProfileOptionsV1,
  StoreProblemV1,
  StoreV1,
} from './store/v1/store-v1.js';
export type { TransportFactoryV1 } from './transport/v1/transport-factory-v1.js';
export type {
  RunOptionsV1,
  RunResultV1,
  TransportDescriptionV1,
  TransportV1,
} from './transport/v1/transport-v1.js';
