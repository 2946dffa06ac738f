/** A profile's options as its backend and its transport get them: checked against their schemas, once per operation, and handed over typed. */
import type { JsonObject } from '../json/json-value.js';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { Profile } from '../spec/profile.js';
import type { TransportFactoryV1 } from '../spec/transport/v1/transport-factory-v1.js';
import { parseOptions } from '../validation/parse-options.js';

/**
 * The profile's `options` (`{}` when it has none) once they fit the backend's `optionsSchema`:
 * what the backend gets as `context.options` and in `targetKey`.
 * @throws ValidationError `E_INVALID_PROFILE` listing every problem (`options.x`).
 */
export function backendOptions(backend: BackendV1, profile: Profile): JsonObject {
  return parseOptions({
    schema: backend.optionsSchema,
    options: profile.options ?? {},
    path: 'options',
    subject: `Profile "${profile.name}" has invalid options for the ${backend.id} backend`,
  });
}

/**
 * The profile's `transportOptions` (`{}` when it has none) for the transport `id`: checked
 * against the factory's `optionsSchema` when it has one, else passed on as they are.
 * @throws ValidationError `E_INVALID_PROFILE` listing every problem (`transportOptions.x`).
 */
export function transportOptions(
  id: string,
  factory: TransportFactoryV1,
  profile: Profile,
): JsonObject {
  const options = profile.transportOptions ?? {};
  if (!factory.optionsSchema) return options;
  return parseOptions({
    schema: factory.optionsSchema,
    options,
    path: 'transportOptions',
    subject: `Profile "${profile.name}" has invalid options for the ${id} transport`,
  });
}
