/** The ssh backend: core's workstation backend on `profile.host`, reached through an ssh transport. */
import { type BackendV1, createWorkstationBackend, Type } from '@yonder/core';
import { portInHost } from './openssh-transport.js';

export const SSH_BACKEND_ID = 'ssh';
/** Longer than a submit may run on the host: after this, a job that left no trace never started. */
const SSH_SUBMIT_GRACE_SECONDS = 90;

/** Options of an ssh profile. */
export const SshOptionsSchema = Type.Object(
  {
    probeTtlSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        description: 'How long the probe ($HOME, boot id) is cached; default 3600.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Options of the ssh backend. */
export interface SshBackendOptions {
  /** `capabilities.submitGraceSeconds`; default 90. */
  readonly submitGraceSeconds?: number;
}

/**
 * The ssh backend, for a workstation without a scheduler: the local backend's behaviour on
 * another machine, by the same scripts. Jobs run detached (own session) in private job
 * directories (`$HOME/.yonder/jobs/<id>/`, or under the profile's workdir) with identity pid +
 * start time + boot id; cancel signals the process group after re-checking it on the host.
 */
export function createSshBackend(options: SshBackendOptions = {}): BackendV1 {
  const backend = createWorkstationBackend({
    id: SSH_BACKEND_ID,
    host: 'required',
    transport: 'ssh',
    submitGraceSeconds: options.submitGraceSeconds ?? SSH_SUBMIT_GRACE_SECONDS,
    optionsSchema: SshOptionsSchema,
  });
  return {
    ...backend,
    // Refused when the profile is saved, not at its first command.
    validateProfile(profile) {
      const issues = backend.validateProfile(profile);
      const port =
        profile.transport === 'openssh' && profile.host ? portInHost(profile.host) : undefined;
      return port ? [...issues, { path: 'host', message: port }] : issues;
    },
  };
}
