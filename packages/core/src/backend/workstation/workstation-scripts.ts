import { PROCESS_IDENTITY_FUNCTIONS } from '../../process/process-identity-script.js';
import { JOB_WRAPPER_SCRIPT } from '../../remote/job-wrapper-script.js';
import { PREPARE_JOB_DIRECTORY } from '../../remote/remote-scripts.js';

/**
 * The fixed sh scripts of the workstation backend, the same on this machine and over ssh:
 * values arrive only as positional parameters or on stdin, answers are `NAME value` lines or
 * `<index> WORD …` lines, one per job, in the order the jobs were given.
 */

/** What the target is: `HOME`, `BOOT`, `HOST`, `SETSID`, `SHELL` and `SYSTEM` lines. */
export const WORKSTATION_PROBE_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
read_boot; read_host
printf 'HOME %s\\nBOOT %s\\nHOST %s\\n' "$HOME" "$boot" "$host"
printf 'SETSID %s\\n' "$(command -v setsid || true)"
printf 'SHELL %s\\n' "$(command -v sh || true)"
printf 'SYSTEM %s\\n' "$(uname -sr)"
`;

/**
 * Make sure `w` is a real directory (never a symlink) that can hold job directories, creating
 * it (and its parents) private when missing. Exit 19: it cannot be made or written; 21: something
 * else is there.
 */
const CHECK_WORK_DIRECTORY = `umask 077
if [ -L "$w" ] || { [ -e "$w" ] && [ ! -d "$w" ]; }; then
  echo "yonder: expected a directory at $w, found something else (a symlink or a file)" >&2; exit 21
fi
if [ ! -d "$w" ] && ! mkdir -p -- "$w"; then echo "yonder: cannot create the work directory $w" >&2; exit 19; fi
if [ -L "$w" ] || [ ! -d "$w" ]; then
  echo "yonder: expected a directory at $w, found something else (a symlink or a file)" >&2; exit 21
fi
if [ ! -w "$w" ] || [ ! -x "$w" ]; then echo "yonder: the work directory $w is not writable" >&2; exit 19; fi`;

/** Check (and create) the work directory $1 as a submit would. */
export const WORKSTATION_WORKDIR_SCRIPT = `w=$1
${CHECK_WORK_DIRECTORY}
`;

/**
 * Prepare the job directory and start the job detached (own session where `setsid` exists,
 * all output to the log, stdin from /dev/null), so it survives the submitter and its
 * connection. Arguments: $1 work directory, $2 job id, $3 payload lengths (see
 * PREPARE_JOB_DIRECTORY), $4 working directory (empty: the job directory); then the job's argv.
 * A working directory that does not exist is refused before anything is written. Any later
 * failure removes the job directory before it says why (the submitter may be gone, and a message
 * to it may end the script by SIGPIPE); on its way to starting the job the script writes nothing
 * to stdout or stderr. Prints `DIR`, `PID`, `START`, `BOOT` and `HOST` lines.
 */
export const WORKSTATION_SUBMIT_SCRIPT = `set -u
${PROCESS_IDENTITY_FUNCTIONS}
w=$1; id=$2; lengths=$3; cwd=$4; shift 4
if [ -n "$cwd" ] && [ ! -d "$cwd" ]; then echo "yonder: the job's working directory $cwd does not exist" >&2; exit 20; fi
${CHECK_WORK_DIRECTORY}
fallback=$w
${PREPARE_JOB_DIRECTORY}
[ -n "$cwd" ] || cwd=$d
if ! cd -- "$cwd" 2>/dev/null; then rm -rf -- "$d"; echo "yonder: cannot enter the working directory $cwd" >&2; exit 20; fi
if ! : > "$d/job.log"; then rm -rf -- "$d"; exit 18; fi
wrapper='${JOB_WRAPPER_SCRIPT.replaceAll("'", "'\\''")}'
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c "$wrapper" yonder-job "$d" "$@" < /dev/null >> "$d/job.log" 2>&1 &
  pid=$!
  # Answer once the wrapper leads its own session and process group (a cancel right after the
  # submit signals that group), or has ended; bounded, in case setsid never gets that far.
  n=0
  while proc_stat "/proc/$pid/stat" && [ "$ps_group" != "$pid" ] && [ "$ps_state" != Z ] && [ "$n" -lt 650 ]; do
    n=$((n + 1))
    [ "$n" -le 50 ] || sleep 0.005 2>/dev/null || { sleep 1; n=$((n + 200)); }
  done
else
  nohup sh -c "$wrapper" yonder-job "$d" "$@" < /dev/null >> "$d/job.log" 2>&1 &
  pid=$!
fi
proc_stat "/proc/$pid/stat" || ps_start=0
read_boot; read_host
printf 'DIR %s\\nPID %s\\nSTART %s\\nBOOT %s\\nHOST %s\\n' "$d" "$pid" "$ps_start" "$boot" "$host"
`;

/** `exit_code DIR`: succeeds, with `code` set to its content, when DIR/exit-code exists. */
const EXIT_CODE_FUNCTION = `exit_code() {
  code=
  [ -f "$1/exit-code" ] || return 1
  { IFS= read -r code < "$1/exit-code"; } 2>/dev/null
  return 0
}`;

/**
 * Observe jobs: arguments are (job directory, pid, start time) triples. Prints `BOOT` and
 * `HOST`, then per job `<index> EXIT <code>`, `<index> RUNNING` or `<index> GONE`. The exit-code
 * file is read again after a process is found gone: it may have ended in between.
 */
export const WORKSTATION_POLL_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
${EXIT_CODE_FUNCTION}
read_boot; read_host
printf 'BOOT %s\\nHOST %s\\n' "$boot" "$host"
i=0
while [ $# -ge 3 ]; do
  if exit_code "$1"; then printf '%s EXIT %s\\n' "$i" "$code"
  elif is_job "$2" "$3"; then printf '%s RUNNING\\n' "$i"
  elif exit_code "$1"; then printf '%s EXIT %s\\n' "$i" "$code"
  else printf '%s GONE\\n' "$i"; fi
  shift 3
  i=$((i + 1))
done
`;

/**
 * Find jobs whose submit was interrupted (their submitters are gone): arguments are job
 * directories. Prints `BOOT` and `HOST`, then per job:
 * - `<index> ABANDONED`: there was no job directory, and now one holding only `.abandoned`
 *   takes its place (and is found again later): a submit script still on its way finds it
 *   there and starts nothing (a job directory is never reused), so the job never starts;
 * - `<index> NODIR`: none, and none could be put in its place (or the submit made it just now);
 * - `<index> NOPID`: the directory, without a readable wrapper.pid yet;
 * - `<index> DEAD`: it started, then died without an exit status;
 * - `<index> FOUND <pid> <start time>`: the start time is the one the wrapper recorded for
 *   itself, never that of whatever process has its pid now.
 */
export const WORKSTATION_RECOVER_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
${EXIT_CODE_FUNCTION}
umask 077
read_boot; read_host
printf 'BOOT %s\\nHOST %s\\n' "$boot" "$host"
i=0
for d in "$@"; do
  pid= start=
  if [ ! -d "$d" ]; then
    w=\${d%/*}
    if [ -n "$w" ] && [ "$w" != "$d" ] && [ ! -L "$w" ] && { [ -d "$w" ] || mkdir -p -- "$w"; } 2>/dev/null && mkdir -- "$d" 2>/dev/null; then
      : > "$d/.abandoned"
      printf '%s ABANDONED\\n' "$i"
    else printf '%s NODIR\\n' "$i"; fi
  elif [ -f "$d/.abandoned" ]; then printf '%s ABANDONED\\n' "$i"
  else
    { read -r pid start < "$d/wrapper.pid"; } 2>/dev/null
    case $pid in
      ''|*[!0-9]*) printf '%s NOPID\\n' "$i" ;;
      *)
        # An old wrapper wrote only its pid: then take the live process's start time, if any.
        if [ -z "$start" ]; then if proc_stat "/proc/$pid/stat"; then start=$ps_start; else start=0; fi; fi
        case $start in ''|*[!0-9]*) start=0 ;; esac
        if is_job "$pid" "$start" || exit_code "$d"; then printf '%s FOUND %s %s\\n' "$i" "$pid" "$start"
        else printf '%s DEAD\\n' "$i"; fi ;;
    esac
  fi
  i=$((i + 1))
done
`;

/**
 * Signal jobs' process groups, each only after re-checking its identity right before the
 * signal: $1 the signal (TERM or KILL), then (pid, start time, boot id, host) quadruples (an
 * empty host is not checked). Prints `<index> SENT`, `<index> NOTRUNNING` or `<index> FAILED`.
 */
export const WORKSTATION_CANCEL_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
sig=$1; shift
read_boot; read_host
i=0
while [ $# -ge 4 ]; do
  if [ "$3" != "$boot" ] || { [ -n "$4" ] && [ "$4" != "$host" ]; } || ! is_job "$1" "$2"; then printf '%s NOTRUNNING\\n' "$i"
  elif kill -s "$sig" -- "-$1" 2>/dev/null || kill -s "$sig" "$1" 2>/dev/null; then printf '%s SENT\\n' "$i"
  else printf '%s FAILED\\n' "$i"; fi
  shift 4
  i=$((i + 1))
done
`;
