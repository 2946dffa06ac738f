/** The JSON Schema of a profile file, built from the common fields and the option schemas of every registered backend and transport. */
import type { Registry } from '@yonder/core';
import { ProfileSchema } from '@yonder/core/backend-kit';

const copy = (value: unknown): Record<string, unknown> =>
  JSON.parse(JSON.stringify(value)) as Record<string, unknown>;

/**
 * The JSON Schema of a profile file with every registered backend's and transport's options:
 * the common fields, then, per backend, what `options` may hold and what `transportOptions`
 * may hold for the transport the profile names, or (with a host) the one the backend declares.
 */
export function profileJsonSchema(registry: Registry): Record<string, unknown> {
  const listed = registry.list();
  const ids = listed.backends.map((entry) => entry.id).sort();
  const transports = listed.transports
    .map((entry) => entry.id)
    .sort()
    .filter((id) => registry.transport(id).optionsSchema !== undefined);
  const ref = (id: string) => ({ $ref: `#/$defs/transport-${id}` });
  const named = transports.map((id) => ({
    if: { properties: { transport: { const: id } }, required: ['transport'] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable.
    then: { properties: { transportOptions: ref(id) } },
  }));
  const common = copy(ProfileSchema);
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'yonder profile',
    ...common,
    ...(transports.length > 0
      ? {
          $defs: Object.fromEntries(
            transports.map((id) => [`transport-${id}`, copy(registry.transport(id).optionsSchema)]),
          ),
        }
      : {}),
    allOf: ids.map((id) => {
      const declared = registry.backend(id).capabilities.transport;
      const byHost = declared && transports.includes(declared);
      return {
        if: { properties: { backend: { const: id } }, required: ['backend'] },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable.
        then: {
          properties: { options: copy(registry.backend(id).optionsSchema) },
          ...(named.length > 0 || byHost
            ? {
                allOf: [
                  ...named,
                  ...(byHost
                    ? [
                        {
                          if: { required: ['host'], not: { required: ['transport'] } },
                          // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then.
                          then: { properties: { transportOptions: ref(declared) } },
                        },
                      ]
                    : []),
                ],
              }
            : {}),
        },
      };
    }),
  };
}
