/** The ssh transport's options, as a profile's `transportOptions`: the schema the registry checks them with, and how the transport reads them. */
import { type Profile, type Static, Type } from '@yonder/core';
import { normaliseProfile } from '@yonder/core/backend-kit';

/** What a profile may set for the ssh transport; everything else comes from the ssh config (Host aliases, keys, ProxyJump). */
export const SshTransportOptionsSchema = Type.Object(
  {
    config: Type.Optional(
      Type.String({
        description:
          'The ssh config file to read instead of ~/.ssh/config (then /etc/ssh/ssh_config).',
      }),
    ),
    acceptNewHostKeys: Type.Optional(
      Type.Boolean({
        description:
          'Record and trust a host key seen for the first time (never a changed one). Default false.',
      }),
    ),
    maxChannels: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        description:
          'At most this many channels at once on the connection (sshd’s MaxSessions is 10). Default 8.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The ssh transport's settings of a profile. */
export type SshSettings = Static<typeof SshTransportOptionsSchema>;

/** A profile's ssh settings, from `transportOptions` (or the `ssh` field older versions stored). */
export function sshSettings(profile: Profile): SshSettings {
  return (normaliseProfile(profile).transportOptions ?? {}) as SshSettings;
}
