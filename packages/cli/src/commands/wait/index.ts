import { numberOption, parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, jobJson, paintState } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder wait JOB... [--timeout SECONDS] [--json]

Wait until every job has finished. Exit status: 0 if every job succeeded; the job's exit
code if a single job failed with one; 124 if the timeout passed first; 1 otherwise.
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { timeout: { type: 'string' }, json: { type: 'boolean' } },
    'wait',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('Name at least one job: yonder wait JOB...');
  const timeout = numberOption(values.timeout, 'timeout');
  const { jobs, timedOut } = await runtime().manager.wait(positionals, {
    ...(timeout === undefined ? {} : { timeoutMs: timeout * 1000 }),
    onChange: (job) =>
      io.stderr(`${job.id} ${paintState(io, job.state)}${job.reason ? ` (${job.reason})` : ''}\n`),
  });
  if (values.json) {
    io.stdout(envelope({ timedOut, jobs: jobs.map(jobJson) }));
  } else {
    for (const job of jobs) {
      const detail = job.exitCode !== null ? ` exit ${job.exitCode}` : '';
      io.stdout(
        `${job.id} ${paintState(io, job.state)}${detail}${job.reason && job.state !== 'succeeded' ? ` (${job.reason})` : ''}\n`,
      );
    }
  }
  if (timedOut) {
    if (!values.json) io.stderr(`yonder: timed out after ${timeout}s\n`);
    return 124;
  }
  if (jobs.every((job) => job.state === 'succeeded')) return 0;
  const only = jobs[0];
  if (
    jobs.length === 1 &&
    only &&
    only.state === 'failed' &&
    only.exitCode !== null &&
    only.exitCode > 0
  ) {
    return only.exitCode & 0xff || 1;
  }
  return 1;
};
