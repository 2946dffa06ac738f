import { YonderError } from './yonder-error.js';

export type PluginKind = 'backend' | 'transport' | 'store';

const codes = {
  backend: 'E_NO_SUCH_BACKEND',
  transport: 'E_NO_SUCH_TRANSPORT',
  store: 'E_NO_SUCH_STORE',
} as const;

/** An id that no registered plugin answers to. The message lists what is available. */
export class NoSuchPluginError extends YonderError {
  readonly kind: PluginKind;
  readonly id: string;
  readonly available: readonly string[];

  constructor(kind: PluginKind, id: string, available: readonly string[], hint?: string) {
    const list = available.length > 0 ? available.join(', ') : '(none)';
    super(codes[kind], `No ${kind} named "${id}". Available: ${list}.${hint ? ` ${hint}` : ''}`);
    this.name = 'NoSuchPluginError';
    this.kind = kind;
    this.id = id;
    this.available = available;
  }
}
