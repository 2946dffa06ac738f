import { ProfileSchema, type Registry } from '@yonder/core';

/**
 * The JSON Schema of a profile file with every registered backend's options: the common
 * fields, then, per backend, what `options` may hold.
 */
export function profileJsonSchema(registry: Registry): Record<string, unknown> {
  const ids = registry
    .list()
    .backends.map((entry) => entry.id)
    .sort();
  const common = JSON.parse(JSON.stringify(ProfileSchema)) as Record<string, unknown>;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'yonder profile',
    ...common,
    allOf: ids.map((id) => ({
      if: { properties: { backend: { const: id } }, required: ['backend'] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a thenable.
      then: {
        properties: { options: JSON.parse(JSON.stringify(registry.backend(id).optionsSchema)) },
      },
    })),
  };
}
