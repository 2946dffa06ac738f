import type { JsonValue } from '../json/json-value.js';
import type { ContainerSpec } from './container.js';
import type { Resources } from './job.js';

/** What every submit through a profile asks for unless it says otherwise (field by field). */
export interface ProfileDefaults {
  /** Resources a submit gets unless it names the same resource itself. */
  resources?: Resources;
  /** Scheduler options put before the submit's own (so the submit's win where the scheduler takes the last). */
  schedulerOptions?: string[];
}

/**
 * What a submit does with resources or scheduler options the backend cannot honour: `refuse`
 * the job (the default), drop them with a `warn`ing, or `ignore` them silently.
 */
export type UnsupportedResourcesPolicy = 'refuse' | 'warn' | 'ignore';

/** A named execution target: which backend, where, and how. */
export interface Profile {
  name: string;
  backend: string;
  /**
   * The registry id of the transport that reaches the target (`local`, or a plugin's);
   * default: with a host, the backend's `capabilities.transport`; else `local`.
   */
  transport?: string;
  /** The host (or an alias the transport knows) for backends that reach a remote machine. */
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
  /**
   * Forget the profile's finished jobs this many seconds after they ended, as `yonder prune`
   * does (the record, and the job directory on the target); `JobManager.list` does it, at most
   * once an hour per ledger. A job whose files could not be removed is kept and tried again.
   */
  retentionSeconds?: number;
  /** The transport's options, validated against the chosen transport's `optionsSchema`. */
  transportOptions?: Record<string, JsonValue>;
  /**
   * @deprecated The SSH settings older versions stored. Normalising a profile (which yonder
   * does wherever it reads one) moves them to `transportOptions`; no backend or transport sees
   * this field.
   */
  ssh?: Readonly<Record<string, JsonValue>>;
  /** Backend-specific options, validated against the backend's schema. */
  options?: Record<string, JsonValue>;
  /** Defaults for every submit through the profile: resources and scheduler options. */
  defaults?: ProfileDefaults;
  /** What a submit does with resources the backend cannot honour; default `refuse`. */
  unsupportedResources?: UnsupportedResourcesPolicy;
  /** The container jobs of this profile run in by default (a job's own `container` wins). */
  container?: ContainerSpec;
}
