/** The error of an id that no registered backend, transport or store answers to. */
import { YonderError } from './yonder-error.js';

export type PluginKind = 'backend' | 'transport' | 'store';

const NAME = 'NoSuchPluginError';
const MARKER = `yonder.error.${NAME}`;
const symbol = Symbol.for(MARKER);

const codes = {
  backend: 'E_NO_SUCH_BACKEND',
  transport: 'E_NO_SUCH_TRANSPORT',
  store: 'E_NO_SUCH_STORE',
} as const;

/**
 * An id that no registered plugin answers to. The message lists what is available, then the
 * hint the application gave for that id (`registry.hint`, e.g. which package to install).
 */
export class NoSuchPluginError extends YonderError {
  readonly [symbol] = true;
  readonly kind: PluginKind;
  readonly id: string;
  readonly available: readonly string[];
  /** The application's hint for this id, also at the end of the message; undefined when none. */
  readonly hint: string | undefined;

  constructor(kind: PluginKind, id: string, available: readonly string[], hint?: string) {
    const list = available.length > 0 ? available.join(', ') : '(none)';
    super(codes[kind], `No ${kind} named "${id}". Available: ${list}.${hint ? ` ${hint}` : ''}`);
    this.name = NAME;
    this.kind = kind;
    this.id = id;
    this.available = available;
    this.hint = hint;
  }

  /** Whether `value` is a NoSuchPluginError, from this copy of core or another. */
  static override isInstance(value: unknown): value is NoSuchPluginError {
    return YonderError.hasMarker(value, MARKER);
  }
}
