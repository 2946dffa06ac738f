import { type JobRecord, toYonderError } from '@yonder/core';
import { isTerminal } from '@yonder/core/backend-kit';
import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { errorText } from '../../error-text.js';
import { escapeControlCharacters } from '../../escape-control-characters.js';
import { envelope, jobJson, paintState } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder cancel JOB... [--no-wait] [--json]

Ask for jobs to stop, wait up to 15 s for them to end, and show their states. The request is
remembered: every later refresh repeats it until the job has ended. A job that had already
ended keeps its outcome and is said to have ended. A JOB that names no job (or several) is
reported on stderr, the others are still cancelled, and the exit status is 1.

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
  const { manager } = runtime();
  // Each job is found on its own: one that cannot be (unknown, ambiguous) is reported and the
  // others are still cancelled.
  const found: JobRecord[] = [];
  const problems: string[] = [];
  for (const reference of positionals) {
    try {
      found.push(...(await manager.status([reference], { refresh: false })));
    } catch (thrown) {
      const error = toYonderError(thrown);
      // Only a reference that names no job (or several) is this job's own problem; anything
      // else (an unreadable ledger) stops the command as before.
      if (error.code !== 'E_NO_SUCH_JOB' && error.code !== 'E_AMBIGUOUS_JOB') throw thrown;
      problems.push(errorText(error));
    }
  }
  const ended = new Set(found.filter((job) => isTerminal(job.state)).map((job) => job.id));
  const jobs =
    found.length === 0
      ? []
      : await manager.cancel(
          found.map((job) => job.id),
          { waitMs: values['no-wait'] ? 0 : 15_000 },
        );
  if (values.json) io.stdout(envelope(jobs.map(jobJson)));
  else
    for (const job of jobs)
      io.stdout(
        `${job.id} ${paintState(io, job.state)}${ended.has(job.id) ? ' (had already ended: nothing to cancel)' : job.state === 'cancelled' || job.cancel === null ? '' : ' (cancel requested)'}\n`,
      );
  for (const problem of problems) io.stderr(`yonder: ${escapeControlCharacters(problem, true)}\n`);
  return problems.length > 0 || jobs.some((job) => job.error !== null && job.state !== 'cancelled')
    ? 1
    : 0;
};
