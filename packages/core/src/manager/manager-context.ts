/** What every part of the job manager shares: the ledger, the clock, the rules, and how backends and their transports are found. */

import type { BackendContextV1, BackendJobV1, BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import type { StatePolicy } from '../state/apply-observation.js';
import { normaliseProfile } from './normalise-profile.js';
import { backendOptions } from './profile-options.js';
import type { Backoff, Clock } from './wait-loop.js';

export interface ManagerContext {
  readonly store: StoreV1;
  readonly stateDirectory: string;
  /** The time written to records. */
  readonly now: () => Date;
  /** The time waits are measured by, and how they pause. */
  readonly clock: Clock;
  /** The pauses of wait and follow (their ceiling is raised to the jobs' `pollSeconds`). */
  readonly backoff: Backoff;
  /** The pauses of `cancel` while it waits for the jobs to end. */
  readonly cancelBackoff: Backoff;
  readonly policy: StatePolicy;
  readonly leaseTtlMs: number;
  resolveBackend(id: string, profile: Profile): Promise<BackendV1>;
  resolveTransport(id: string, profile: Profile): Promise<TransportFactoryV1>;
  /**
   * What a backend gets for one operation on a profile's target: the profile's options,
   * checked against the backend's schema, and its (shared) transport.
   * @throws ValidationError `E_INVALID_PROFILE` when the options do not fit the schemas.
   */
  backendContext(profile: Profile, backend: BackendV1): Promise<BackendContextV1>;
}

/**
 * A job as `backend` sees it when polling, cancelling or reading logs, with its profile's
 * options checked against the backend's schema.
 * @throws ValidationError `E_INVALID_PROFILE` when they do not fit it.
 */
export function backendJob(job: JobRecord, backend: BackendV1): BackendJobV1 {
  const profile = normaliseProfile(job.profileSnapshot);
  return {
    id: job.id,
    name: job.name,
    externalId: job.externalId,
    state: job.state,
    createdAt: job.createdAt,
    cancelRequested: job.cancel !== null,
    profile,
    options: backendOptions(backend, profile),
    data: job.data,
  };
}

/** The current records of `jobs` (a job gone from the ledger keeps the copy given). */
export function reread(context: ManagerContext, jobs: readonly JobRecord[]): Promise<JobRecord[]> {
  return Promise.all(jobs.map(async (job) => (await context.store.getJob(job.id)) ?? job));
}
