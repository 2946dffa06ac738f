import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, jobDetails, jobJson } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder status JOB... [--no-refresh] [--json]

Show jobs in full, with their history, after refreshing them.
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { 'no-refresh': { type: 'boolean' }, json: { type: 'boolean' } },
    'status',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('Name at least one job: yonder status JOB...');
  const jobs = await runtime().manager.status(positionals, { refresh: !values['no-refresh'] });
  if (values.json)
    io.stdout(envelope(positionals.length === 1 ? jobJson(jobs[0]!) : jobs.map(jobJson)));
  else io.stdout(jobs.map((job) => jobDetails(io, job)).join('\n'));
  return 0;
};
