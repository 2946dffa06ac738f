/** Submit requests for the workstation backend's tests: a fresh id each, the local profile. */
import type { SubmitRequestV1 } from '../../spec/backend/v1/backend-v1.js';
import type { Profile } from '../../spec/profile.js';

export const TEST_PROFILE: Profile = { name: 'local', backend: 'local' };

let sequence = 0;

/** A request for `true` (or what `extra` says) with an id no other request of the run has. */
export function testRequest(extra: Partial<SubmitRequestV1> = {}): SubmitRequestV1 {
  sequence += 1;
  const id = `${String(sequence).padStart(4, '0')}${Date.now().toString(16).slice(-8)}`;
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
