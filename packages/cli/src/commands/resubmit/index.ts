/** `yonder resubmit JOB`: submit a job again as it was (program, name, environment, resources, scheduler options, working directory, settings), printing the new id. */
import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, jobJson } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder resubmit JOB [--profile P] [--json]

Submit JOB again with the same spec (its settings are kept beside its record) through its
profile as it is now, or --profile P, and print the new job's id. Secrets are never kept: a job
that had --secret NAME takes $NAME from this environment again.
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { profile: { type: 'string' }, json: { type: 'boolean' } },
    'resubmit',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('Name one job: yonder resubmit JOB');
  const { manager } = runtime();
  const old = await manager.resolve(positionals[0] as string);
  const secrets: Record<string, string> = {};
  for (const name of old.spec.secretNames) {
    const value = Object.hasOwn(io.env, name) ? io.env[name] : undefined;
    if (value !== undefined) secrets[name] = value;
    // As submit does: the secret travels only into the job's 0600 file from here on.
    delete io.env[name];
    delete process.env[name];
  }
  const job = await manager.resubmit(old.id, {
    secrets,
    ...(values.profile ? { profile: String(values.profile) } : {}),
    onWarning: (message) => io.stderr(`yonder: warning: ${message}\n`),
  });
  io.stdout(values.json ? envelope(jobJson(job)) : `${job.id}\n`);
  return 0;
};
