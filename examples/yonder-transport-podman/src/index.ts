import type { PluginV1 } from '@yonder/core';
import { podmanTransportFactory } from './podman-transport.js';

export {
  createPodmanTransport,
  type PodmanTransportOptions,
  PodmanTransportOptionsSchema,
  podmanTransportFactory,
} from './podman-transport.js';

/** What the yonder CLI calls when the config names this package. */
export function createYonderPlugin(): PluginV1 {
  return { specificationVersion: 'v1', transports: { podman: podmanTransportFactory } };
}

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
