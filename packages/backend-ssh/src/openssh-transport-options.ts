/** The openssh transport's options, as a profile's `transportOptions`: the schema the registry checks them with, and how the transport reads them. */
import { type Profile, type Static, Type } from '@yonder/core';
import { normaliseProfile, parseOptions } from '@yonder/core/backend-kit';

/** Ten minutes: how long the master stays up after its last command, unless the profile says otherwise. */
export const DEFAULT_CONTROL_PERSIST_SECONDS = 600;

/** What a profile may set for the openssh transport; everything else is the user's own ssh config, read by ssh itself. */
export const OpensshTransportOptionsSchema = Type.Object(
  {
    config: Type.Optional(
      Type.String({
        description:
          'The ssh config file, given to ssh as -F FILE (then neither ~/.ssh/config nor /etc/ssh/ssh_config is read).',
      }),
    ),
    acceptNewHostKeys: Type.Optional(
      Type.Boolean({
        description:
          'StrictHostKeyChecking=accept-new: record a host key seen for the first time (never a changed one). Default false (the ssh config decides).',
      }),
    ),
    maxChannels: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        description:
          'At most this many commands at once over the master connection (sshd’s MaxSessions is 10). Default 8.',
      }),
    ),
    controlPersistSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 604_800,
        description:
          'ControlPersist: how long the master connection stays up after its last command, in seconds. Default 600.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The openssh transport's settings of a profile. */
export type OpensshSettings = Static<typeof OpensshTransportOptionsSchema>;

/**
 * A profile's openssh settings, from `transportOptions`, checked against the schema: for a
 * transport made by hand, as the registry's factory is handed them checked already.
 * @throws ValidationError `E_INVALID_PROFILE` listing every problem (`transportOptions.x`).
 */
export function opensshSettings(profile: Profile): OpensshSettings {
  return parseOptions({
    schema: OpensshTransportOptionsSchema,
    options: normaliseProfile(profile).transportOptions ?? {},
    path: 'transportOptions',
    subject: `Profile "${profile.name}" has invalid options for the openssh transport`,
  });
}
