/** Registering a plugin package: its createYonderPlugin checked for shape and contract version, then everything it provides added to the registry. */
import { getErrorMessage } from '../errors/get-error-message.js';
import { UnsupportedVersionError } from '../errors/unsupported-version-error.js';
import { YonderError } from '../errors/yonder-error.js';
import type { PluginV1 } from '../spec/plugin/v1/plugin-v1.js';
import { type PluginOrigin, type Registry, SUPPORTED_SPECIFICATION_VERSIONS } from './registry.js';

function fail(origin: PluginOrigin, message: string, cause?: unknown): YonderError {
  return new YonderError(
    'E_PLUGIN',
    `Plugin "${origin.package}": ${message}`,
    cause === undefined ? {} : { cause },
  );
}

/**
 * Check a plugin module's shape and contract version, create the plugin with its options and
 * register what it provides. Every error names the package and what is wrong.
 * @throws YonderError `E_PLUGIN` (or `E_UNSUPPORTED_VERSION` naming the versions supported).
 */
export function registerPlugin(
  registry: Registry,
  module: Record<string, unknown>,
  origin: PluginOrigin,
  options: Readonly<Record<string, unknown>> = {},
): PluginV1 {
  const factory =
    module.createYonderPlugin ??
    (module.default as Record<string, unknown> | undefined)?.createYonderPlugin;
  if (typeof factory !== 'function') {
    throw fail(
      origin,
      'it does not export a createYonderPlugin(options) function, so it is not a yonder plugin.',
    );
  }
  let plugin: PluginV1;
  try {
    plugin = factory(options) as PluginV1;
  } catch (error) {
    throw fail(origin, `createYonderPlugin failed: ${getErrorMessage(error)}`, error);
  }
  if (typeof plugin !== 'object' || plugin === null)
    throw fail(origin, 'createYonderPlugin did not return an object.');
  if (plugin.specificationVersion !== 'v1') {
    throw new UnsupportedVersionError(
      `Plugin "${origin.package}"`,
      plugin.specificationVersion,
      SUPPORTED_SPECIFICATION_VERSIONS,
    );
  }
  if (plugin.backends !== undefined && !Array.isArray(plugin.backends))
    throw fail(origin, '"backends" must be a list of backends.');
  for (const key of ['transports', 'stores'] as const) {
    const value = plugin[key];
    if (
      value !== undefined &&
      (typeof value !== 'object' || value === null || Array.isArray(value))
    ) {
      throw fail(origin, `"${key}" must be an object of id → factory.`);
    }
  }
  try {
    for (const backend of plugin.backends ?? []) registry.addBackend(backend, origin);
    for (const [id, factoryOf] of Object.entries(plugin.transports ?? {}))
      registry.addTransport(id, factoryOf, origin);
    for (const [id, factoryOf] of Object.entries(plugin.stores ?? {}))
      registry.addStore(id, factoryOf, origin);
  } catch (error) {
    throw fail(origin, getErrorMessage(error), error);
  }
  return plugin;
}
