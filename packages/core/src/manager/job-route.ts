/** Which jobs one call to their backend may act on together: the same backend and target, reached the same way. */
import type { JobRecord } from '../spec/job.js';
import { normaliseProfile } from './normalise-profile.js';
import { transportKey } from './transport-cache.js';

/**
 * Each record's route, worked out once: a refresh asks for it several times per job. Records are
 * never changed in place (an update makes a new object), so a record's route cannot go stale.
 */
const routes = new WeakMap<object, string>();

/**
 * The key jobs are grouped by for a poll, a cancel or a clean-up: their backend, their target,
 * and the route their profile reaches it by (the transport asked for, the host and the
 * transport's options). Two profiles that name one host alias through different ssh configs
 * share a target but not a route: each one's jobs go through its own transport, never the
 * other's, which may reach another machine or account where their job directories do not exist.
 */
export function jobRoute(job: Pick<JobRecord, 'backend' | 'target' | 'profileSnapshot'>): string {
  let route = routes.get(job);
  if (route === undefined) {
    const profile = normaliseProfile(job.profileSnapshot);
    route = `${job.backend}|${job.target}|${transportKey(profile.transport ?? '', profile)}`;
    routes.set(job, route);
  }
  return route;
}
