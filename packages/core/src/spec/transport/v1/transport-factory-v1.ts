/** The contract of a transport factory: how the registry makes the transport a profile chose, and the schema of its options. */
import type { TSchema } from '@sinclair/typebox';
import type { Profile } from '../../profile.js';
import type { TransportV1 } from './transport-v1.js';

/**
 * Makes the transport a profile needs, registered under an id (`registry.addTransport`) and
 * chosen by `profile.transport` or the backend's `capabilities.transport`. The manager calls it
 * once per transport id, host and options, shares what it returns between operations and
 * closes it at the end. The profile it gets is normalised, and its `transportOptions` have
 * passed `optionsSchema`.
 * @throws YonderError `E_INVALID_PROFILE` when the profile cannot be reached this way (e.g. it has no host).
 */
export interface TransportFactoryV1 {
  (profile: Profile): TransportV1;
  /**
   * The schema of `profile.transportOptions` for this transport (TypeBox; strict, with
   * `additionalProperties: false`, like every user-facing schema). Without one the options are
   * passed on unchecked.
   */
  readonly optionsSchema?: TSchema;
}
