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

/** This package's version. */
export const VERSION: string = '0.1.0';
