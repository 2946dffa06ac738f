/**
 * A scheduler's bin directory (Slurm's `binDir`, Grid Engine's): the directory a profile names
 * for the scheduler's commands, judged on the target by the one trust rule before any command
 * of it runs, in every script and in `profile check`. For backend authors, from
 * `@yonder/core/backend-kit`.
 */
import { TRUSTED_DIRECTORY_FUNCTIONS } from './job-directory-functions.js';

/** The exit status of `bin_command` when the directory or the command is not to be trusted. */
export const UNTRUSTED_BIN_EXIT = 23;

/**
 * Defines, for a POSIX sh script, with the trust rule's functions (TRUSTED_DIRECTORY_FUNCTIONS):
 * - `bin_command DIR ROLE CMD ARGS…`: judges `DIR/CMD` where it leads (`trusted_program`: DIR
 *   and every directory above it the user's or root's and writable by nobody else, every link on
 *   the way theirs, CMD a regular executable file of theirs), then runs it with DIR first on
 *   its PATH (for the commands it runs in turn), and with the script's PATH otherwise untouched:
 *   the check's own helpers (`stat`, `awk`, `getent`…) are never looked up in DIR. A refusal is
 *   printed on stderr (naming ROLE, the path, its owner and mode, and the fix) and returns
 *   UNTRUSTED_BIN_EXIT (23), nothing run; 127 when DIR has no CMD.
 * - `bin_command_path DIR ROLE CMD`: the same check alone; sets `bin_path` to `DIR/CMD`.
 */
export const BIN_DIR_FUNCTIONS = `${TRUSTED_DIRECTORY_FUNCTIONS}
bin_command_path() {
  bin_path=
  if [ ! -e "$1/$3" ] && [ ! -L "$1/$3" ]; then
    printf 'yonder: %s: not found in %s\\n' "$3" "$1" >&2; return 127
  fi
  trusted_program "$1/$3" "$2" || return ${UNTRUSTED_BIN_EXIT}
  bin_path=$1/$3
}
bin_command() {
  bc_dir=$1
  bin_command_path "$1" "$2" "$3" || return $?
  shift 3
  PATH=$bc_dir\${PATH:+:$PATH} "$bin_path" "$@"
}`;

/**
 * Check a bin directory before it is used: `$1` the directory, `$2` what it is for messages
 * (`options.binDir`…), then the command names it must hold. Prints one line per problem:
 * `NODIR` when it is not a directory; `UNTRUSTED <message>` when it, or anything on the way to
 * it, is not to be trusted (the rule's refusal on one line); per command `MISSING <name>`,
 * `NOTEXEC <name>`, or `UNTRUSTED <message>`. Nothing is run from it.
 */
export const CHECK_BIN_DIR_SCRIPT = `${TRUSTED_DIRECTORY_FUNCTIONS}
b=$1; role=$2; shift 2
if [ ! -d "$b" ]; then echo NODIR; exit 0; fi
if ! why=$(trusted_path "$b" "$role" directory user-or-root 2>&1); then
  printf 'UNTRUSTED %s\\n' "$(printf '%s' "$why" | tr '\\n' ' ')"; exit 0
fi
for c in "$@"; do
  if [ ! -e "$b/$c" ]; then echo "MISSING $c"
  elif [ ! -f "$b/$c" ] || [ ! -x "$b/$c" ]; then echo "NOTEXEC $c"
  elif ! why=$(trusted_program "$b/$c" "$role command" 2>&1); then
    printf 'UNTRUSTED %s\\n' "$(printf '%s' "$why" | tr '\\n' ' ')"
  fi
done
`;

/**
 * What CHECK_BIN_DIR_SCRIPT's output says is wrong with the bin directory `binDir`, as
 * `profile check` problems naming `field` (`options.binDir`). Empty when nothing is.
 */
export function binDirProblems(stdout: string, binDir: string, field: string): string[] {
  const lines = stdout.split('\n');
  if (lines.includes('NODIR')) return [`${field}: ${binDir} is not a directory on the target`];
  return lines.flatMap((line) => {
    const space = line.indexOf(' ');
    const what = space < 0 ? line : line.slice(0, space);
    const rest = space < 0 ? '' : line.slice(space + 1);
    if (what === 'MISSING') return [`${field}: ${binDir} has no ${rest}`];
    if (what === 'NOTEXEC') return [`${field}: ${binDir}/${rest} is not an executable file`];
    if (what === 'UNTRUSTED') return [`${field}: ${rest.replace(/^yonder: /, '').trim()}`];
    return [];
  });
}
