export {
  COMMAND_BACKEND_ID,
  createCommandBackend,
  jobScript,
  renderCommand,
} from './command-backend.js';
export { type CommandOptions, CommandOptionsSchema, PLACEHOLDERS } from './command-options.js';
export { extractId, parseStatus, type StatusLine } from './parse-status.js';

import type { PluginV1 } from '@yonder/core';
import { createCommandBackend as command } from './command-backend.js';

/** The plugin entry the CLI loads by package name: the command backend. */
export function createYonderPlugin(): PluginV1 {
  return { specificationVersion: 'v1', backends: [command()] };
}

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
