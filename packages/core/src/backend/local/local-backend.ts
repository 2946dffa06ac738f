/** The built-in local backend: the workstation backend on this machine, through the local transport. */
import { join } from 'node:path';
import type { BackendV1 } from '../../spec/backend/v1/backend-v1.js';
import type { Profile } from '../../spec/profile.js';
import { createWorkstationBackend } from '../workstation/workstation-backend.js';

export const LOCAL_BACKEND_ID = 'local';

/** A wrapper slow to start (a loaded machine) is not taken as never started before this. */
const LOCAL_SUBMIT_GRACE_SECONDS = 30;

/** The directory under which the local backend makes job directories. */
export function localWorkdir(profile: Profile, stateDirectory: string): string {
  return profile.workdir ?? join(stateDirectory, 'runs');
}

/** Options of the local backend. */
export interface LocalBackendOptions {
  /** `capabilities.submitGraceSeconds`; default 30. */
  readonly submitGraceSeconds?: number;
}

/**
 * The built-in backend: runs jobs on this machine, detached from yonder (own session and
 * process group, no terminal), in a private job directory (`<state>/runs/<id>/`, or under the
 * profile's workdir) holding the log, the settings file and the exit-code file the wrapper
 * writes; a job without `cwd` runs in yonder's working directory. Identity is pid + start time
 * + boot id.
 */
export function createLocalBackend(options: LocalBackendOptions = {}): BackendV1 {
  return createWorkstationBackend({
    id: LOCAL_BACKEND_ID,
    host: 'none',
    submitGraceSeconds: options.submitGraceSeconds ?? LOCAL_SUBMIT_GRACE_SECONDS,
    defaultWorkdir: (context) => join(context.stateDirectory, 'runs'),
    defaultCwd: () => process.cwd(),
  });
}
