/** `yonder disconnect PROFILE`: close the profile's kept login (`ssh -O exit` on the openssh transport's master connection). */
import { keptLoginCommand } from '../connect/kept-login-command.js';

const HELP = `Usage:
  yonder disconnect PROFILE [--json]

Closes the login "yonder connect PROFILE" opened (ssh -O exit). Jobs keep running; the next
command logs in again (or, on a host that asks a person, needs "yonder connect" again).
`;

export const run = keptLoginCommand('disconnect', HELP, async (transport, host, profile) => {
  if (!transport.logout) return null;
  const closed = await transport.logout();
  return {
    text: `${closed ? 'Disconnected from' : 'Not connected to'} ${host} (${profile}).`,
    json: { disconnected: closed },
  };
});
