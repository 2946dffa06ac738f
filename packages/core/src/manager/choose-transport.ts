/** The rule that picks the transport a profile uses: its own `transport`, else with a host the backend's declared one, else `local`. */
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { Profile } from '../spec/profile.js';

/** The registry id of the transport that reaches a profile's target. */
export function chooseTransport(profile: Profile, backend: BackendV1): string {
  return (
    profile.transport ?? (profile.host ? backend.capabilities.transport : undefined) ?? 'local'
  );
}
