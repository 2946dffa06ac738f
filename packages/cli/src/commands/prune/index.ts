/** `yonder prune`: forget every finished job older than a duration (or the config's retention), with its files on its target. */
import type { JobState } from '@yonder/core';
import { TERMINAL_STATES } from '@yonder/core/backend-kit';
import { durationOption, parse } from '../../args.js';
import type { Command } from '../../command.js';
import { readConfig } from '../../plugins/config.js';
import { UsageError } from '../../usage-error.js';
import { printForgotten } from '../rm/forget-output.js';

const HELP = `Usage: yonder prune [--older-than DURATION] [--state S]... [--dry-run] [--json]

Forget every finished job that ended longer ago than DURATION (90s, 15m, 12h, 30d, 2w), as
yonder rm does: its record and its job directory on its target. Jobs that have not finished are
never pruned. Without --older-than, the config's "retention" (e.g. "retention": "30d" in
~/.config/yonder/config.json) says how long jobs are kept.

  --older-than D   only jobs that ended at least D ago
  --state S        only jobs in state S (succeeded, failed, cancelled); repeatable
  --dry-run        list what would be forgotten, change nothing
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    {
      'older-than': { type: 'string' },
      state: { type: 'string', multiple: true },
      'dry-run': { type: 'boolean', short: 'n' },
      json: { type: 'boolean' },
    },
    'prune',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}".`);
  let olderThanMs = durationOption(values['older-than'], 'older-than');
  if (olderThanMs === undefined) {
    const { retention, path } = readConfig(io.env);
    if (retention === null)
      throw new UsageError(
        `Say how old: yonder prune --older-than 30d (or set "retention" in ${path ?? 'your yonder config'}).`,
      );
    olderThanMs = durationOption(retention, 'older-than (the config’s retention)') as number;
  }
  const states = (values.state as string[] | undefined)
    ?.flatMap((state) => state.split(','))
    .map((word) => word.toLowerCase())
    .map((state) => {
      if (!TERMINAL_STATES.has(state as JobState))
        throw new UsageError(
          `--state: "${state}" is not a finished state; use ${[...TERMINAL_STATES].join(', ')}.`,
        );
      return state as JobState;
    });
  const { results, problems } = await runtime().manager.prune({
    olderThanMs,
    ...(states ? { states } : {}),
    dryRun: Boolean(values['dry-run']),
  });
  for (const problem of problems)
    io.stderr(`yonder: warning: ${problem.message} (${problem.location}); left alone\n`);
  if (results.length === 0 && !values.json) io.stderr('Nothing to prune.\n');
  return printForgotten(io, results, Boolean(values.json));
};
