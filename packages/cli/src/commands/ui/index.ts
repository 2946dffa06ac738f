/** `yonder ui`: serve the local web view of the ledger from @yonder/ui, loaded only when asked for, until interrupted. */
import { YonderError } from '@yonder/core';
import { integerOption, parse } from '../../args.js';
import type { Command } from '../../command.js';
import type { Runtime } from '../../runtime.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder ui [--port N] [--no-open]

Serve a web view of every job in the ledger on 127.0.0.1, live: states, logs, cancel and
resubmit. The first line of output is the address, with a token that every request needs;
anyone with the address can act on your jobs, so keep it to yourself. Ctrl-C stops.

  --port N    listen on port N (default: a free one)
  --no-open   do not open a browser

Needs the package @yonder/ui beside @yonder/cli.
`;

type UiModule = typeof import('@yonder/ui');

/**
 * @yonder/ui, found in the CLI's own installation and checked as its plugins are (never from a
 * directory another user could put it in); a missing one names the install.
 */
async function loadUi(runtime: Runtime): Promise<UiModule> {
  const ui = await runtime.importOwn('@yonder/ui');
  if (ui === null) {
    throw new YonderError(
      'E_PLUGIN',
      'yonder ui needs the package @yonder/ui, which is not installed. Install it beside yonder: npm install @yonder/ui (with -g when yonder is installed globally).',
    );
  }
  return ui as UiModule;
}

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { port: { type: 'string' }, 'no-open': { type: 'boolean' } },
    'ui',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError('yonder ui takes no arguments.');
  const port = integerOption(values.port, 'port') ?? 0;
  if (port > 65_535) throw new UsageError(`--port must be at most 65535, got ${port}.`);
  const ui = await loadUi(runtime());
  const server = await ui.startUi({
    manager: runtime().manager,
    port,
    open: values['no-open'] !== true,
  });
  io.stdout(`${server.url}\n`);
  if (server.openProblem) {
    io.stderr(`yonder: no browser opened (${server.openProblem}); open the address above.\n`);
  }
  io.stderr('yonder: serving the ledger on 127.0.0.1 until interrupted (Ctrl-C).\n');
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  return 0;
};
