export type { Command, CommandContext } from './command.js';
export { HELP, main } from './main.js';
export { defaultIo, type Io } from './output.js';
export { createRuntime, KNOWN_BACKEND_PACKAGES, type Runtime } from './runtime.js';
export { VERSION } from './version.js';
