import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, jobJson, paintState } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder cancel JOB... [--no-wait] [--json]

Ask for jobs to stop, wait up to 15 s for them to end, and show their states. The request is
remembered: every later refresh repeats it until the job has ended.

  --no-wait   send the request and return at once (for workflow engines with short timeouts)
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { json: { type: 'boolean' }, 'no-wait': { type: 'boolean' } },
    'cancel',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('Name at least one job: yonder cancel JOB...');
  const jobs = await runtime().manager.cancel(positionals, {
    waitMs: values['no-wait'] ? 0 : 15_000,
  });
  if (values.json) io.stdout(envelope(jobs.map(jobJson)));
  else
    for (const job of jobs)
      io.stdout(
        `${job.id} ${paintState(io, job.state)}${job.state === 'cancelled' || job.cancel === null ? '' : ' (cancel requested)'}\n`,
      );
  return jobs.some((job) => job.error !== null && job.state !== 'cancelled') ? 1 : 0;
};
