import { toYonderError, ValidationError, YonderError } from '@yonder/core';
import { withFixedSearchPath } from '@yonder/core/backend-kit';
import { closest } from './args.js';
import type { Command, CommandContext } from './command.js';
import { errorText } from './error-text.js';
import { escapeControlCharacters } from './escape-control-characters.js';
import { defaultIo, errorEnvelope, type Io } from './output.js';
import { createRuntime, type Runtime } from './runtime.js';
import { SIGPIPE_STATUS } from './stdout-pipe.js';
import { UsageError } from './usage-error.js';
import { VERSION } from './version.js';

export const HELP = `yonder ${VERSION}: send jobs to remote compute and follow them afterwards

Usage:
  yonder submit [--profile P] [--name N] [--settings FILE] [--env K=V]... [--secret NAME]...
                [--time T] [--cpus N] [--memory M] [--gpus N] [--nodes N] [--partition P]
                [--account A] [--qos Q] [--scheduler-option ARG]... [--cwd DIR]
                [--after JOB[:ok|notok|any|started]]... [--json] -- COMMAND [ARG...]
  yonder submit --batch FILE|- [--profile P] [--json]   (JSON lines, one job each; one id per submitted job out)
  yonder resubmit JOB [--profile P] [--after JOB[:WHEN]... | --no-after] [--json]
  yonder list [--all] [--state S] [--profile P] [--user NAME | --all-users] [--no-refresh] [--watch]
              [--json | --format T | -q]   (alias: ls)
  yonder status JOB... [--no-refresh] [--json | --format TEMPLATE | -q]
  yonder wait JOB... [--timeout SECONDS] [--give-up-after DURATION] [--json]
  yonder logs JOB [-n N | -c N | --all] [-f] [--json]
  yonder cancel JOB... [--no-wait] [--json]
  yonder rm JOB... [--force] [--json]
  yonder prune [--older-than DURATION] [--state S]... [--dry-run] [--json]
  yonder profile add NAME --backend B [--host H] [--workdir D] [--local-root P --remote-root P]
                 [--pending-timeout S] [--poll-seconds S] [--cancel-grace S] [--retention D]
                 [--set KEY=VALUE]...
                 [--transport T] [--transport-set KEY=VALUE]...
                 [--ssh-config FILE] [--accept-new-host-keys] [--max-channels N]
                 [--control-persist S] [--force]
  yonder profile edit NAME [the flags of add]     (no flags: opens $EDITOR; validated before saving)
  yonder profile list | show NAME | remove NAME | check NAME | schema
  yonder help COMMAND                              the command's own help
  yonder completion bash|zsh|fish                  a completion script for the shell
  yonder connect PROFILE | disconnect PROFILE     open / close the openssh transport's kept login
  yonder plugins [--json]
  yonder ledger status | migrate | grant ROLE [--admin] | export | import FILE   the ledger in use
  yonder ui [--port N] [--no-open]                 (needs @yonder/ui)

JOB is a job id or an unambiguous prefix of one. --profile defaults to $YONDER_PROFILE, else "local".
The ledger lives in $YONDER_STATE_DIR, else $XDG_STATE_HOME/yonder, else ~/.local/state/yonder;
$YONDER_STORE (or the config's "store") names a PostgreSQL team ledger instead (yonder help ledger).

Exit status: 0 success; 1 failure; 2 usage error; wait: the job's exit code when one job failed, 124 on timeout,
69 when a target stayed unreachable for --give-up-after;
130 after Ctrl-C (logs --follow, list --watch, wait); 141 when stdout was closed early (yonder list | head -1), quietly.
`;

export const COMMANDS: Record<string, () => Promise<{ run: Command }>> = {
  submit: () => import('./commands/submit/index.js'),
  list: () => import('./commands/list/index.js'),
  ls: () => import('./commands/list/index.js'),
  status: () => import('./commands/status/index.js'),
  wait: () => import('./commands/wait/index.js'),
  logs: () => import('./commands/logs/index.js'),
  cancel: () => import('./commands/cancel/index.js'),
  resubmit: () => import('./commands/resubmit/index.js'),
  rm: () => import('./commands/rm/index.js'),
  remove: () => import('./commands/rm/index.js'),
  prune: () => import('./commands/prune/index.js'),
  completion: () => import('./commands/completion/index.js'),
  // What completion scripts ask for while completing (profile names, job ids).
  __complete: async () => ({ run: (await import('./commands/completion/index.js')).complete }),
  profile: () => import('./commands/profile/index.js'),
  connect: () => import('./commands/connect/index.js'),
  disconnect: () => import('./commands/disconnect/index.js'),
  plugins: () => import('./commands/plugins/index.js'),
  ledger: () => import('./commands/ledger/index.js'),
  ui: () => import('./commands/ui/index.js'),
};

/** The commands people type (not the completion scripts' helper). */
const PUBLIC = Object.keys(COMMANDS).filter((name) => !name.startsWith('_'));

/** " Did you mean submit?" for a mistyped command, or nothing. */
function suggestion(name: string): string {
  const guess = closest(name, PUBLIC);
  return guess ? ` Did you mean "${guess}"?` : '';
}

function wantsJson(argv: readonly string[]): boolean {
  const split = argv.indexOf('--');
  return (split < 0 ? argv : argv.slice(0, split)).includes('--json');
}

/**
 * Make this process's PATH one of fixed directories only (fixedSearchPath), so that nothing the
 * CLI starts by name — ssh, an editor, a browser, the tools of yonder's scripts, a job's
 * commands — is looked up in the working directory, and no SHELL that is not an absolute path
 * (ssh execs it for a ProxyCommand). Called once by the `yonder` program.
 */
export function fixSearchPath(env: NodeJS.ProcessEnv = process.env): void {
  const fixed = withFixedSearchPath(env);
  env.PATH = fixed.PATH;
  if (fixed.SHELL === undefined) delete env.SHELL;
}

/** Run the CLI with `argv` (without node and the script); resolves with the exit status. */
export async function main(argv: string[], io: Io = defaultIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-v' || name === 'version') {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  // `yonder help submit` is `yonder submit --help`.
  if (name === 'help' && rest[0] !== undefined) {
    if (COMMANDS[rest[0]]) return main([rest[0], '--help'], io);
    io.stderr(
      `yonder: no help on "${rest[0]}".${suggestion(rest[0])} Topics: ${PUBLIC.join(', ')}.\n`,
    );
    return 2;
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout)(HELP);
    return name === undefined ? 2 : 0;
  }
  const json = wantsJson(rest);
  let runtime: Runtime | undefined;
  const context: CommandContext = {
    io,
    runtime: () => {
      runtime ??= createRuntime(io.env);
      return runtime;
    },
  };
  try {
    const load = COMMANDS[name];
    if (!load)
      throw new UsageError(
        `Unknown command "${name}".${suggestion(name)} Commands: ${PUBLIC.join(', ')}.`,
      );
    const { run } = await load();
    const code = await run(rest, context);
    return io.closed?.aborted ? SIGPIPE_STATUS : code;
  } catch (thrown) {
    // stdout's reader went away: whatever failed after that, end quietly, as coreutils do.
    if (io.closed?.aborted) return SIGPIPE_STATUS;
    const error = toYonderError(thrown);
    if (json)
      io.stdout(
        errorEnvelope(
          error.code,
          errorText(error),
          ValidationError.isInstance(error) ? error.issues : undefined,
        ),
      );
    else {
      // A message may hold what the user typed or a record held (an id, a name): never raw
      // control characters on the terminal.
      io.stderr(`yonder: ${escapeControlCharacters(errorText(error), true)}\n`);
      if (error.code === 'E_USAGE') io.stderr('Run "yonder --help" for usage.\n');
    }
    if (!YonderError.isInstance(thrown) && io.env.YONDER_DEBUG) {
      io.stderr(`${thrown instanceof Error ? (thrown.stack ?? '') : ''}\n`);
    }
    return error.code === 'E_USAGE' ? 2 : 1;
  } finally {
    await runtime?.manager.close();
  }
}
