/** `yonder status`: jobs in full, refreshed first, as details, JSON (an array), a template or ids. */
import type { JobRecord } from '@yonder/core';
import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { checkFormat, formatJob } from '../../format-job.js';
import { envelope, jobDetails, jobJson, warnUnreachable } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder status JOB... [--no-refresh] [--json | --format TEMPLATE | -q]

Show jobs in full, with their history, after refreshing them.

  --no-refresh        show the ledger as it is, without asking any scheduler
  --json              the jobs as JSON: always an array, one object per job named
  --format TEMPLATE   one line per job: {field} placeholders over the JSON record, e.g. '{state}'
                      or '{id} {state} {exitCode}' (nested fields by dots: {error.code}); a value
                      mapped to another word: '{state:succeeded=success,failed=failed,*=running}'
  -q, --quiet         the ids only
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    {
      'no-refresh': { type: 'boolean' },
      json: { type: 'boolean' },
      format: { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
    },
    'status',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('Name at least one job: yonder status JOB...');
  const format = values.format === undefined ? undefined : String(values.format);
  if (format !== undefined) checkFormat(format);
  const jobs = await runtime().manager.status(positionals, { refresh: !values['no-refresh'] });
  warnUnreachable(io, runtime().manager.failingTargets(jobs));
  if (format !== undefined) io.stdout(jobs.map((job) => formatJob(format, job, io.color)).join(''));
  else if (values.quiet) io.stdout(jobs.map((job) => `${job.id}\n`).join(''));
  else if (values.json) io.stdout(envelope(jobs.map(jobJson)));
  else {
    // Each parent's state beside it: what a waiting job waits for, and how its parents ended.
    const store = runtime().manager.store;
    const ids = new Set(jobs.flatMap((job) => (job.after ?? []).map((parent) => parent.job)));
    const parents = new Map<string, JobRecord | null>();
    await Promise.all(
      [...ids].map(async (id) => {
        // An unreadable record shows no state; a missing one shows `gone`.
        const record = await store.getJob(id).then(
          (found) => found ?? null,
          () => undefined,
        );
        if (record !== undefined) parents.set(id, record);
      }),
    );
    io.stdout(jobs.map((job) => jobDetails(io, job, parents)).join('\n'));
  }
  return 0;
};
