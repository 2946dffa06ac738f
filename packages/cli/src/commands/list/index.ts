/** `yonder list`: active and recent jobs (or all), refreshed first, as a table, JSON, a template or ids; `--watch` follows them. */
import type { JobState } from '@yonder/core';
import { isJobState } from '@yonder/core/backend-kit';
import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { checkFormat, formatJob } from '../../format-job.js';
import { envelope, jobJson, warnUnreachable } from '../../output.js';
import { UsageError } from '../../usage-error.js';
import { listAll } from './list-all.js';
import {
  type ListSelection,
  type ListShape,
  limitOption,
  sinceAndLimit,
  sinceOption,
} from './list-selection.js';
import { watchList } from './list-watch.js';

const HELP = `Usage: yonder list [--all] [--state S] [--profile P] [--since WHEN] [--limit N] [--user NAME | --all-users] [--no-refresh] [--json | --format TEMPLATE | -q]

List active jobs and the 20 most recent ones, newest first, after one batched refresh per target.

  --all          every job in the ledger
  --state S      only jobs in state S (submitting, pending, running, succeeded, failed, cancelled, unknown); repeatable
  --profile P    only jobs submitted through profile P
  --since WHEN   only jobs created since WHEN: a duration back from now (2h, 7d) or a date (2026-12-01)
  --limit N      at most the N newest of them
  --user NAME    the jobs of another user (a Unix user or database role) of a team ledger, read-only
  --all-users    every user's jobs of a team ledger, read-only
  --no-refresh   show the ledger as it is, without asking any scheduler
  --json         print the jobs as JSON
  --format TEMPLATE   one line per job: {field} placeholders over the JSON record, e.g. '{id} {state}'
  -q, --quiet    the ids only, one per line
  -w, --watch    follow the listed jobs (and those submitted meanwhile) until every one has ended
                 or Ctrl-C: on a terminal the list redrawn in place, newest first, cut to the
                 terminal's height; otherwise one "ID STATE" line per change (the id with -q,
                 the template with --format); NDJSON events ({"type","job"}) with --json.
                 --state, --profile, --since and --limit choose the jobs as for list
`;

export const run: Command = async (argv, context) => {
  const { io, runtime } = context;
  const { values, positionals } = parse(
    argv,
    {
      all: { type: 'boolean' },
      state: { type: 'string', multiple: true },
      profile: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
      user: { type: 'string' },
      'all-users': { type: 'boolean' },
      'no-refresh': { type: 'boolean' },
      json: { type: 'boolean' },
      format: { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
      watch: { type: 'boolean', short: 'w' },
    },
    'list',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}".`);
  const states = (values.state as string[] | undefined)
    ?.flatMap((s) => s.split(','))
    // As --profile: RUNNING and running are the same state.
    .map((word) => word.toLowerCase())
    .map((state) => {
      if (!isJobState(state)) {
        throw new UsageError(
          `--state: "${state}" is not a state; use submitting, pending, running, succeeded, failed, cancelled or unknown.`,
        );
      }
      return state as JobState;
    });
  const format = values.format === undefined ? undefined : String(values.format);
  if (format !== undefined) checkFormat(format);
  const owner = ownerOption(values.user, values['all-users']);
  if (owner !== undefined && runtime().manager.store.id === 'fs')
    throw new UsageError(
      `--${values.user === undefined ? 'all-users' : 'user'} needs a team ledger: the file ledger holds your own jobs only. Set YONDER_STORE to the team ledger's URL.`,
    );
  const options = {
    all: Boolean(values.all),
    ...(owner === undefined ? {} : { owner }),
    refresh: !values['no-refresh'],
    ...(states ? { states } : {}),
    ...(values.profile ? { profile: String(values.profile) } : {}),
  };
  const selection: ListSelection = {
    ...options,
    ...optional('since', sinceOption(values.since)),
    ...optional('limit', limitOption(values.limit)),
  };
  const shape: ListShape =
    format !== undefined
      ? { kind: 'format', format }
      : { kind: values.quiet ? 'quiet' : values.json ? 'json' : 'table' };
  if (values.watch) return watchList(context, selection, shape);
  if (options.all && owner === undefined && runtime().manager.store.listing)
    return listAll(context, selection, shape);
  const listed = await runtime().manager.list(options);
  const jobs = sinceAndLimit(listed.jobs, selection);
  for (const problem of listed.problems) io.stderr(`yonder: warning: ${problem.message}\n`);
  warnUnreachable(io, runtime().manager.failingTargets(jobs));
  // `--profile nope` lists nothing; say whether that is because there is no such profile.
  if (options.profile && jobs.length === 0)
    await runtime()
      .manager.profile(options.profile)
      .catch((error: Error) => io.stderr(`yonder: warning: ${error.message}\n`));
  if (format !== undefined) io.stdout(jobs.map((job) => formatJob(format, job, io.color)).join(''));
  else if (values.quiet) io.stdout(jobs.map((job) => `${job.id}\n`).join(''));
  else if (values.json) io.stdout(envelope(jobs.map(jobJson)));
  else if (jobs.length === 0) io.stderr('No jobs. Submit one with: yonder submit -- COMMAND\n');
  // The table's display-width tables load only when there is a table to print.
  else io.stdout((await import('../../job-table.js')).jobTable(io, jobs));
  return 0;
};

/** Whose jobs: undefined for one's own, '*' for everyone's, else the user named. */
function ownerOption(user: unknown, allUsers: unknown): string | undefined {
  if (user !== undefined && allUsers)
    throw new UsageError('--user and --all-users: give one of them.');
  if (allUsers) return '*';
  if (user === undefined) return undefined;
  const name = String(user);
  if (name === '' || name === '*' || /[\0-\x1f\x7f]/.test(name) || name.length > 256)
    throw new UsageError('--user: a user or role name, without control characters.');
  return name;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
