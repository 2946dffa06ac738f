/** Which jobs one call to their backend may act on together: the same backend and target, reached the same way. */
import type { JobRecord } from '../spec/job.js';
import { normaliseProfile } from './normalise-profile.js';
import { transportKey } from './transport-cache.js';

/**
 * The key jobs are grouped by for a poll, a cancel or a clean-up: their backend, their target,
 * and the route their profile reaches it by (the transport asked for, the host and the
 * transport's options). Two profiles that name one host alias through different ssh configs
 * share a target but not a route: each one's jobs go through its own transport, never the
 * other's, which may reach another machine or account where their job directories do not exist.
 */
export function jobRoute(job: Pick<JobRecord, 'backend' | 'target' | 'profileSnapshot'>): string {
  const profile = normaliseProfile(job.profileSnapshot);
  return `${job.backend}|${job.target}|${transportKey(profile.transport ?? '', profile)}`;
}
