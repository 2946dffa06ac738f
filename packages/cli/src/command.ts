import type { Io } from './output.js';
import type { Runtime } from './runtime.js';

/** What every command gets. */
export interface CommandContext {
  io: Io;
  /** Created on first use, so `--help` never touches the ledger. */
  runtime(): Runtime;
}

export type Command = (argv: string[], context: CommandContext) => Promise<number>;
