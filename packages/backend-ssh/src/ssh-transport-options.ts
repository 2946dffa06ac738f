/** The ssh transport's options, as a profile's `transportOptions`: the schema the registry checks them with, and how the transport reads them. */
import { type Profile, type Static, Type } from '@yonder/core';
import { normaliseProfile, parseOptions } from '@yonder/core/backend-kit';

/** What a profile may set for the ssh transport; everything else comes from the ssh config (Host aliases, keys, ProxyJump). */
export const SshTransportOptionsSchema = Type.Object(
  {
    config: Type.Optional(
      Type.String({
        description:
          'The ssh config file to read instead of ~/.ssh/config and /etc/ssh/ssh_config, as ssh -F does (it must exist).',
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

/**
 * A profile's ssh settings, from `transportOptions` (or the `ssh` field older versions stored),
 * checked against the schema: for a transport made by hand, as the registry's factory is
 * handed them checked already.
 * @throws ValidationError `E_INVALID_PROFILE` listing every problem (`transportOptions.x`).
 */
export function sshSettings(profile: Profile): SshSettings {
  return parseOptions({
    schema: SshTransportOptionsSchema,
    options: normaliseProfile(profile).transportOptions ?? {},
    path: 'transportOptions',
    subject: `Profile "${profile.name}" has invalid options for the ssh transport`,
  });
}
