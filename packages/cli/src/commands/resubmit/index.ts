/** `yonder resubmit JOB`: submit a job again as it was (program, name, environment, resources, scheduler options, working directory, settings), printing the new id. */
import { parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, jobJson } from '../../output.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder resubmit JOB [--profile P] [--after JOB[:WHEN]... | --no-after] [--json]

Submit JOB again with the same spec (its settings are kept beside its record) through its
profile as it is now, or --profile P, and print the new job's id. Secrets are never kept: a job
that had --secret NAME takes $NAME from this environment again.

A job submitted with --after waits for the same parents again; when one of them can no longer
satisfy it (it failed, and the job wanted it to succeed), the resubmit is refused, naming it.
  --after JOB[:WHEN]     wait for these parents instead (repeatable; as yonder submit --after)
  --no-after             wait for none
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    {
      profile: { type: 'string' },
      after: { type: 'string', multiple: true },
      'no-after': { type: 'boolean' },
      json: { type: 'boolean' },
    },
    'resubmit',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('Name one job: yonder resubmit JOB');
  const after = values.after as string[] | undefined;
  if (after && values['no-after'])
    throw new UsageError('--after and --no-after contradict each other: give one.');
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
    ...(after ? { after } : values['no-after'] ? { after: [] } : {}),
    onWarning: (message) => io.stderr(`yonder: warning: ${message}\n`),
  });
  io.stdout(values.json ? envelope(jobJson(job)) : `${job.id}\n`);
  return 0;
};
