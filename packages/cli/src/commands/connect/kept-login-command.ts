/** What `yonder connect` and `yonder disconnect` share: one profile named, its transport found, and a refusal when that transport keeps no login. */
import { type TransportV1, YonderError } from '@yonder/core';
import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope } from '../../output.js';
import { UsageError } from '../../usage-error.js';

/** A command on a profile's kept login: `act` does it and says what happened, for people and for `--json`. */
export function keptLoginCommand(
  command: 'connect' | 'disconnect',
  help: string,
  act: (
    transport: TransportV1,
    host: string,
    profile: string,
  ) => Promise<{ text: string; json: Record<string, unknown> } | null>,
): Command {
  return async (argv, { io, runtime }) => {
    const { values, positionals } = parse(argv, { json: { type: 'boolean' } }, command);
    if (values.help) {
      io.stdout(help);
      return 0;
    }
    if (positionals.length !== 1)
      throw new UsageError(`Name one profile: yonder ${command} PROFILE`);
    const name = positionals[0] as string;
    const transport = await runtime().manager.transportOf(name);
    const done = await act(transport, transport.target.replace(/^ssh:/, ''), name);
    if (done === null)
      throw new YonderError(
        'E_TRANSPORT',
        `Profile "${name}" uses the ${transport.id} transport, which keeps no login to ${command === 'connect' ? 'open' : 'close'}.`,
        { data: { profile: name, transport: transport.id } },
      );
    io.stdout(values.json ? envelope({ profile: name, ...done.json }) : `${done.text}\n`);
    return 0;
  };
}
