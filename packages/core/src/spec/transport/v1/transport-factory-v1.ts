/** The contract of a transport factory: how the registry makes the transport a profile chose, from the profile and its checked, typed options, and the schema of those options. */
import type { TSchema } from '@sinclair/typebox';
import type { JsonObject } from '../../../json/json-value.js';
import type { Profile } from '../../profile.js';
import type { TransportV1 } from './transport-v1.js';

/**
 * Makes the transport a profile needs, registered under an id (`registry.addTransport`) and
 * chosen by `profile.transport` or the backend's `capabilities.transport`. The manager calls it
 * once per transport id, host and options, shares what it returns between operations and
 * closes it at the end. The profile it gets is normalised; `options` are its
 * `transportOptions` (`{}` when it has none), checked against `optionsSchema` first, so that
 * `Options` may be `Static<typeof optionsSchema>` and the factory never casts them.
 * @throws YonderError `E_INVALID_PROFILE` when the profile cannot be reached this way (e.g. it has no host).
 */
export type TransportFactoryV1<Options = JsonObject> = MakeTransportV1<Options> & {
  /**
   * The schema of `profile.transportOptions` for this transport (TypeBox; strict, with
   * `additionalProperties: false`, like every user-facing schema). Without one the options are
   * passed on unchecked.
   */
  readonly optionsSchema?: TSchema;
};

/**
 * The factory's call. Declared as a method, whose parameters are compared both ways, so that a
 * factory of typed options is still a `TransportFactoryV1` where the registry keeps factories
 * of every kind.
 */
type MakeTransportV1<Options> = {
  make(profile: Profile, options: Options): TransportV1;
}['make'];
