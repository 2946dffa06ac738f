/** `yonder wait`: refresh until the jobs have ended, saying which targets cannot be polled; the exit status is the outcome. */
import { durationOption, numberOption, parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, jobJson, paintState } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder wait JOB... [--timeout SECONDS] [--give-up-after DURATION] [--json]

Wait until every job has finished. A target whose jobs cannot be polled is said so on stderr,
once (the target, the error, since when).

  --timeout SECONDS          stop waiting after this long (exit 124)
  --give-up-after DURATION   stop waiting once a target has failed every poll for this long
                             (90s, 15m, 1h; exit 69)

Exit status: 0 if every job succeeded; the job's exit code if a single job failed with one;
124 if the timeout passed first; 69 if a target stayed unreachable for --give-up-after; 1 otherwise.
`;

/** `wait --give-up-after`: a target stayed unreachable that long (sysexits' EX_UNAVAILABLE). */
export const UNREACHABLE_STATUS = 69;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { timeout: { type: 'string' }, 'give-up-after': { type: 'string' }, json: { type: 'boolean' } },
    'wait',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('Name at least one job: yonder wait JOB...');
  const timeout = numberOption(values.timeout, 'timeout');
  const giveUpAfterMs = durationOption(values['give-up-after'], 'give-up-after');
  const { jobs, timedOut, gaveUp } = await runtime().manager.wait(positionals, {
    ...(timeout === undefined ? {} : { timeoutMs: timeout * 1000 }),
    ...(giveUpAfterMs === undefined ? {} : { giveUpAfterMs }),
    onUnreachable: (failure) =>
      io.stderr(
        `yonder: warning: cannot poll ${failure.target} (${failure.jobs.length} job${failure.jobs.length > 1 ? 's' : ''}) since ${failure.since}: ${failure.error.code}: ${failure.error.message}\n`,
      ),
    onChange: (job) =>
      io.stderr(`${job.id} ${paintState(io, job.state)}${job.reason ? ` (${job.reason})` : ''}\n`),
  });
  if (values.json) {
    io.stdout(envelope({ timedOut, gaveUp, jobs: jobs.map(jobJson) }));
  } else {
    for (const job of jobs) {
      const detail = job.exitCode !== null ? ` exit ${job.exitCode}` : '';
      io.stdout(
        `${job.id} ${paintState(io, job.state)}${detail}${job.reason && job.state !== 'succeeded' ? ` (${job.reason})` : ''}\n`,
      );
    }
  }
  if (gaveUp) {
    if (!values.json)
      io.stderr(
        `yonder: gave up: ${gaveUp.target} has not answered since ${gaveUp.since} (--give-up-after ${values['give-up-after']})\n`,
      );
    return UNREACHABLE_STATUS;
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
