import type { JsonValue } from '../json/json-value.js';

/** SSH settings of a profile; everything else comes from the ssh config (Host aliases, keys, ProxyJump). */
export interface SshSettings {
  /** The ssh config file to read instead of ~/.ssh/config (then /etc/ssh/ssh_config). */
  config?: string;
  /** Record and trust a host key seen for the first time (never a changed one). Default false. */
  acceptNewHostKeys?: boolean;
  /** At most this many channels at once on the connection (sshd's MaxSessions is 10). Default 8. */
  maxChannels?: number;
}

/** A named execution target: which backend, where, and how. */
export interface Profile {
  name: string;
  backend: string;
  /**
   * The registry id of the transport that reaches the target (`local`, `ssh`, a plugin's);
   * default: with a host, the backend's `capabilities.transport`; else `local`.
   */
  transport?: string;
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
  /** How to reach `host` over SSH (for profiles with a host). */
  ssh?: SshSettings;
  /** Backend-specific options, validated against the backend's schema. */
  options?: Record<string, JsonValue>;
}
