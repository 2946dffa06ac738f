import { integerOption, parse } from '../../args.js';
import type { Command } from '../../command.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder logs JOB [--lines N] [--follow]

Print the last N lines (default 200) of the job's output; --follow keeps printing until the job ends.
`;

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { lines: { type: 'string', short: 'n' }, follow: { type: 'boolean', short: 'f' } },
    'logs',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError('Name one job: yonder logs JOB [--lines N] [--follow]');
  const lines = integerOption(values.lines, 'lines', 0) ?? (values.follow ? 10 : 200);
  const manager = runtime().manager;
  if (values.follow) {
    const controller = new AbortController();
    const stop = (): void => controller.abort();
    process.once('SIGINT', stop);
    try {
      await manager.follow(positionals[0] as string, io.stdout, {
        lines,
        signal: controller.signal,
        onNotice: (text) => io.stderr(`yonder: ${text}\n`),
      });
    } finally {
      process.removeListener('SIGINT', stop);
    }
    return 0;
  }
  const { chunk } = await manager.logs(positionals[0] as string, { lines });
  if (!chunk.exists) io.stderr(`yonder: ${chunk.message ?? 'The log does not exist yet.'}\n`);
  io.stdout(chunk.text);
  return 0;
};
