/** Submit requests for the workstation backend's tests: a fresh id each, the local profile. */
import { randomBytes } from 'node:crypto';
import type { SubmitRequestV1 } from '../../spec/backend/v1/backend-v1.js';
import type { Profile } from '../../spec/profile.js';

export const TEST_PROFILE: Profile = { name: 'local', backend: 'local' };

/**
 * A request for `true` (or what `extra` says) with a random id, as yonder makes them: no other
 * test process's job has it, so a cancel that looks for the job's marker finds this one only.
 */
export function testRequest(extra: Partial<SubmitRequestV1> = {}): SubmitRequestV1 {
  const id = randomBytes(6).toString('hex');
  return {
    id,
    name: 'test',
    marker: `yonder:${id}`,
    createdAt: new Date().toISOString(),
    argv: ['true'],
    env: {},
    secrets: {},
    resources: {},
    schedulerOptions: [],
    profile: TEST_PROFILE,
    ...extra,
  };
}
