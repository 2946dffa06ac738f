import type { PluginV1 } from '@yonder/core';
import { createTspBackend } from './tsp-backend.js';

export { createTspBackend, type TspOptions, TspOptionsSchema } from './tsp-backend.js';

/** What the yonder CLI calls when the config names this package. */
export function createYonderPlugin(): PluginV1 {
  return { specificationVersion: 'v1', backends: [createTspBackend()] };
}

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
