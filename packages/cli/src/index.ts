export type { Command, CommandContext } from './command.js';
export { type CreateYonderOptions, createYonder, type Yonder } from './create-yonder.js';
export { HELP, main } from './main.js';
export { defaultIo, type Io } from './output.js';
export { configPath, readConfig, type UserConfig } from './plugins/config.js';
export { BUNDLED_PLUGINS, createRuntime, type PluginStatus, type Runtime } from './runtime.js';
export { VERSION } from './version.js';
