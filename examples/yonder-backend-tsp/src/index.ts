import type { PluginV1 } from '@yonder/core';
import { createTspBackend } from './tsp-backend.js';

export { createTspBackend, TspOptionsSchema } from './tsp-backend.js';

/** What the yonder CLI calls when the config names this package. */
export function createYonderPlugin(): PluginV1 {
  return { specificationVersion: 'v1', backends: [createTspBackend()] };
}

export const VERSION = '0.1.0';
