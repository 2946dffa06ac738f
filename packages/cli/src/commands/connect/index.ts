/** `yonder connect PROFILE`: open the profile's kept login (the openssh transport's master connection), letting ssh ask on the terminal whatever the site asks. */
import { keptLoginCommand } from './kept-login-command.js';

const HELP = `Usage:
  yonder connect PROFILE [--json]

Logs in to the profile's host once and keeps the login open (the openssh transport's master
connection, for its ControlPersist time: transportOptions.controlPersistSeconds, default 600 s).
ssh asks on this terminal for whatever the site needs — a password, a second factor, a key's
passphrase, an unknown host key — or through SSH_ASKPASS (with SSH_ASKPASS_REQUIRE=force when
there is no terminal). Every other yonder command runs ssh with BatchMode=yes and reuses it;
"yonder disconnect PROFILE" closes it.
`;

export const run = keptLoginCommand('connect', HELP, async (transport, host, profile) => {
  if (!transport.login) return null;
  const { alreadyConnected } = await transport.login('inherit');
  return {
    text: `${alreadyConnected ? 'Already connected' : 'Connected'} to ${host} (${profile}).`,
    json: { connected: true, alreadyConnected },
  };
});
