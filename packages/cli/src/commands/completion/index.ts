/** `yonder completion bash|zsh|fish`: a completion script for the shell; and `yonder __complete profiles|jobs`, the words it asks for while completing. */
import type { Command, CommandContext } from '../../command.js';
import { UsageError } from '../../usage-error.js';
import { bashScript, type CompletionTable, fishScript, zshScript } from './completion-scripts.js';

const HELP = `Usage: yonder completion bash|zsh|fish

Print a completion script for the shell: commands, each command's flags, profile names (after
the profile flag and profile commands), job ids (after status, wait, logs, cancel, rm, resubmit).

  bash   eval "$(yonder completion bash)"        (in ~/.bashrc)
  zsh    eval "$(yonder completion zsh)"         (in ~/.zshrc)
  fish   yonder completion fish > ~/.config/fish/completions/yonder.fish
`;

/** The long flags a command's help names, read from the help itself so they never drift. */
async function flagsOf(command: string, context: CommandContext): Promise<string[]> {
  const { main } = await import('../../main.js');
  let text = '';
  await main([command, '--help'], {
    ...context.io,
    stdout: (chunk) => {
      text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    },
    stderr: (chunk) => {
      text += chunk;
    },
  });
  // Flags as the help lists them, never a flag its prose mentions: every flag of a usage line
  // (`Usage:`, `yonder …`, or one going on with `[`), and the flags an option line starts with
  // (up to its description, two spaces on).
  const found = new Set<string>();
  for (const line of text.split('\n')) {
    let part = '';
    if (/^(Usage:|\s*yonder |\s+\[)/.test(line)) part = line;
    else if (/^\s+-/.test(line)) part = line.trimStart().split(/\s{2,}/)[0] ?? '';
    for (const match of part.matchAll(/(?:^|[\s[|])(--[a-z][a-z-]*)/g))
      found.add(match[1] as string);
  }
  return [...found].sort();
}

export const run: Command = async (argv, context) => {
  const { io } = context;
  const [shell, ...rest] = argv;
  if (shell === undefined || shell === '--help' || shell === '-h') {
    (shell === undefined ? io.stderr : io.stdout)(HELP);
    return shell === undefined ? 2 : 0;
  }
  if (rest.length > 0) throw new UsageError(`Unexpected argument "${rest[0]}".`);
  const make = { bash: bashScript, zsh: zshScript, fish: fishScript }[shell];
  if (!make) throw new UsageError(`yonder completion knows bash, zsh and fish, not "${shell}".`);
  const { COMMANDS } = await import('../../main.js');
  const commands = Object.keys(COMMANDS).filter((name) => !name.startsWith('_'));
  const table: CompletionTable = { commands: [...commands, 'help'], flags: {} };
  for (const command of commands) table.flags[command] = await flagsOf(command, context);
  io.stdout(make(table));
  return 0;
};

/** `yonder __complete profiles|jobs`: names to complete, one a line, from the ledger as it is. */
export const complete: Command = async (argv, { io, runtime }) => {
  const { manager } = runtime();
  if (argv[0] === 'profiles') {
    const { profiles } = await manager.store.listProfiles();
    const names = new Set(['local', ...profiles.map((profile) => profile.name)]);
    io.stdout([...names].map((name) => `${name}\n`).join(''));
  } else if (argv[0] === 'jobs') {
    const [active, recent] = await Promise.all([
      manager.store.listJobs({ activeOnly: true }),
      manager.store.listJobs({ limit: 200 }),
    ]);
    const ids = new Set([...active.jobs, ...recent.jobs].map((job) => job.id));
    io.stdout([...ids].map((id) => `${id}\n`).join(''));
  } else throw new UsageError('yonder __complete profiles|jobs');
  return 0;
};
