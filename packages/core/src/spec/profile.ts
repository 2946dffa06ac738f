import type { JsonValue } from '../json/json-value.js';

/** A named execution target: which backend, where, and how. */
export interface Profile {
  name: string;
  backend: string;
  /** Host (or ssh config alias) for backends that reach a remote machine. */
  host?: string;
  /** Absolute directory on the target under which job directories are made. */
  workdir?: string;
  /** Local dataset root, paired with `remoteRoot` for path mapping of settings. */
  localRoot?: string;
  remoteRoot?: string;
  /** Cancel a job still pending after this many seconds (it then fails with reason `pending-timeout`). */
  pendingTimeoutSeconds?: number;
  /** Suggested polling interval for `wait` and `logs --follow`, 1 to 3600 seconds. */
  pollSeconds?: number;
  /** Seconds between the polite cancel signal and the forceful one. */
  cancelGraceSeconds?: number;
  /** Backend-specific options, validated against the backend's schema. */
  options?: Record<string, JsonValue>;
}
