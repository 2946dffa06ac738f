/** `yonder rm JOB...`: forget finished jobs and remove their directories (locally and on their targets); `--force` cancels an active one first. */
import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { UsageError } from '../../usage-error.js';
import { printForgotten } from './forget-output.js';

const HELP = `Usage: yonder rm JOB... [--force] [--json]        (alias: remove)

Forget finished jobs: their records, and their job directories (logs, settings, exit codes) on
their targets, one command per target. A directory is removed only if it is the user's own and
not a link; links inside it are removed, never followed. A job that has not finished is refused
unless --force, which cancels it, waits up to 10 s for it to end, and forgets it even when its
target cannot be reached (its files are then left there, and said so).

Exit status: 0; 1 when a job's files could not be removed (its record is forgotten anyway).
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { force: { type: 'boolean', short: 'f' }, json: { type: 'boolean' } },
    'rm',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('Name at least one job: yonder rm JOB...');
  const results = await runtime().manager.forget(positionals, { force: Boolean(values.force) });
  return printForgotten(io, results, Boolean(values.json));
};
