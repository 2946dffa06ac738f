// What a program using `createYonder` meets, from the one package it installs: the errors it
// catches and the types of the jobs, specs and events it handles (all from @yonder/core).
import type { JobEvent } from '@yonder/core';

export {
  type JobEvent,
  type JobManager,
  type JobRecord,
  type JobSpec,
  type JobState,
  type JobWatch,
  type ListOptions,
  type Profile,
  toYonderError,
  ValidationError,
  YonderError,
  type YonderErrorCode,
} from '@yonder/core';

/** The name of a field an `updated` or `state-changed` event says changed. */
export type JobField = Extract<JobEvent, { changed: readonly unknown[] }>['changed'][number];
export type { Command, CommandContext } from './command.js';
export { type CreateYonderOptions, createYonder, type Yonder } from './create-yonder.js';
export { HELP, main } from './main.js';
export { defaultIo, type Io } from './output.js';
export { configPath, readConfig, type UserConfig } from './plugins/config.js';
export { BUNDLED_PLUGINS, createRuntime, type PluginStatus, type Runtime } from './runtime.js';
export { VERSION } from './version.js';
