export {
  COMMAND_BACKEND_ID,
  createCommandBackend,
  jobScript,
  renderCommand,
} from './command-backend.js';
export { type CommandOptions, CommandOptionsSchema, PLACEHOLDERS } from './command-options.js';
export { extractId, parseStatus, type StatusLine } from './parse-status.js';

/** This package's version. */
export const VERSION: string = '0.1.0';
