/** The fixed shell scripts the backend runs on the target: the clean prelude of every Grid Engine command, the job script, the submit, the poll's second look and the refusal of jobs in error state. */
import {
  EXIT_CODES_SCRIPT,
  JOB_WRAPPER_SCRIPT,
  PREPARE_JOB_DIRECTORY,
} from '@yonder/core/backend-kit';

/**
 * Every Grid Engine command runs after this prelude: time and locale are fixed (qacct prints
 * times in the local zone), and the client variables that change what the commands print are
 * removed. SGE_ROOT and SGE_CELL, which say which cluster to talk to, are kept.
 */
const PRELUDE = `export TZ=UTC LC_ALL=C
unset SGE_LONG_QNAMES SGE_DEBUG_LEVEL SGE_ND SGE_QSTAT_OPTIONS 2>/dev/null || true`;

/** Run one Grid Engine command with its arguments (`qconf -sss`, `qdel 12 13`…). */
export const RUN_COMMAND = `${PRELUDE}
exec "$@"`;

/** `qstat -u <the user this runs as> -xml`: every job of the user's, in one command. */
export const QSTAT_SCRIPT = `${PRELUDE}
u=$(id -un) || exit 1
exec qstat -u "$u" -xml`;

/**
 * The job script qsub is given (run by /bin/sh in the job's working directory): `$1` the job
 * directory. Its output goes to the job's log (Grid Engine's own `-o`/`-e` are /dev/null: they
 * would read `$HOME`, `$JOB_ID` and `host:` in a path as its own), its argv comes from
 * `argv.sh` (written with the one quoting function: qsub would cut an argument at a newline),
 * then the shared job wrapper runs it.
 */
export const JOB_SCRIPT = `#!/bin/sh
d=$1; shift
exec >> "$d/job.log" 2>&1 < /dev/null
if ! . "$d/argv.sh"; then echo "yonder: the job's arguments in $d/argv.sh cannot be read" >&2; exit 126; fi
set -- "$d" "$@"
${JOB_WRAPPER_SCRIPT}
`;

/** SUBMIT_SCRIPT's exit statuses for a working directory that cannot be used, and what each means. */
export const CWD_PROBLEMS: Readonly<Record<number, string>> = {
  20: 'does not exist on the target',
  21: 'is not a directory on the target',
  22: 'cannot be entered on the target (no search permission)',
};

/**
 * Submit one job: check its working directory, prepare its directory from stdin (variables,
 * secrets, settings), write the job script and its argv there, and run qsub from inside the
 * job directory (qsub reads a \`.sge_request\` in the directory it runs in: only this fresh,
 * private one). Arguments: work directory (empty: $HOME/.yonder/gridengine), job id, payload
 * lengths, the job script, the argv file's text, the working directory (empty: the job
 * directory), then qsub's options. Prints \`DIR <job dir>\` and qsub's answer. Exit 17: the job
 * directory exists; 20–22: the working directory cannot be used (CWD_PROBLEMS); qsub's own
 * status otherwise (the job directory is removed when qsub fails).
 */
export const SUBMIT_SCRIPT = `${PRELUDE}
set -u
w=$1; id=$2; lengths=$3; script=$4; argv=$5; cwd=$6; shift 6
if [ -n "$cwd" ]; then
  [ -e "$cwd" ] || exit 20
  [ -d "$cwd" ] || exit 21
  (cd -- "$cwd") 2>/dev/null || exit 22
fi
fallback="$HOME/.yonder/gridengine"
${PREPARE_JOB_DIRECTORY}
( set -C; printf '%s' "$script" > "$d/job.sh" && printf '%s' "$argv" > "$d/argv.sh" ) || { rm -rf -- "$d"; exit 18; }
[ -n "$cwd" ] || cwd=$d
cd -- "$d" || { rm -rf -- "$d"; exit 18; }
printf 'DIR %s\\n' "$d"
qsub -terse "$@" -wd "$cwd" -o /dev/null -e /dev/null -j n -b n -shell y -S /bin/sh "$d/job.sh" "$d"
rc=$?
if [ "$rc" -ne 0 ]; then cd / && rm -rf -- "$d"; fi
exit "$rc"
`;

/**
 * The poll's second look at jobs qstat no longer lists, in one command: `$1` the number of job
 * ids (or job names: recovery looks jobs up by name), the ids, then the job directories.
 * First \`USER <the user this runs as>\`; per id, \`QACCT <id> <exit status>\` and qacct's
 * lines as \`OUT <id> <line>\` and \`ERR <id> <line>\`; then, per job directory whose wrapper
 * recorded an exit status, EXIT_CODES_SCRIPT's line prefixed with \`EXIT \`. qacct runs first,
 * so a job that ends meanwhile shows its exit code rather than no record.
 */
export const RESOLVE_SCRIPT = `${PRELUDE}
k=$1; shift
printf 'USER %s\\n' "$(id -un)"
t=$(mktemp -d) || exit 18
trap 'rm -rf -- "$t"' EXIT
i=0
while [ "$i" -lt "$k" ]; do
  qacct -j "$1" > "$t/out" 2> "$t/err"
  printf 'QACCT %s %s\\n' "$1" "$?"
  while IFS= read -r line || [ -n "$line" ]; do printf 'OUT %s %s\\n' "$1" "$line"; done < "$t/out"
  while IFS= read -r line || [ -n "$line" ]; do printf 'ERR %s %s\\n' "$1" "$line"; done < "$t/err"
  shift; i=$((i + 1))
done
(
${EXIT_CODES_SCRIPT}
) | while IFS= read -r line; do printf 'EXIT %s\\n' "$line"; done
`;

/**
 * Jobs in error state (Eqw) are taken out of the queue once their reason is read: `$@` job
 * ids. Per id, \`REASON <id> <line>\` for each line of \`qstat -j <id> -xml\`, then qdel.
 */
export const REFUSE_SCRIPT = `${PRELUDE}
for j in "$@"; do
  qstat -j "$j" -xml 2>&1 | while IFS= read -r line; do printf 'REASON %s %s\\n' "$j" "$line"; done
  qdel "$j" > /dev/null 2>&1
done
`;
