import {
  CONTAINER_CHECK_FUNCTIONS,
  CONTAINER_LAUNCH_SCRIPT,
} from '../../container/container-scripts.js';
import { JOB_PROCESS_FUNCTIONS } from '../../process/job-processes-script.js';
import { PROCESS_IDENTITY_FUNCTIONS } from '../../process/process-identity-script.js';
import {
  JOB_FILE_FUNCTIONS,
  PRIVATE_DIRECTORY_FUNCTIONS,
  TRUSTED_DIRECTORY_FUNCTIONS,
} from '../../remote/job-directory-functions.js';
import { JOB_WRAPPER_SCRIPT } from '../../remote/job-wrapper-script.js';
import { PREPARE_JOB_DIRECTORY } from '../../remote/remote-scripts.js';

/**
 * The fixed sh scripts of the workstation backend, the same on this machine and over ssh:
 * values arrive only as positional parameters or on stdin, answers are `NAME value` lines or
 * `<index> WORD …` lines, one per job, in the order the jobs were given.
 */

/**
 * How a job is put in a session (and process group) of its own, so that a cancel reaches all of
 * it: `detach` is `setsid`, else `perl` or `python3` (their setsid(2), then exec, so the pid
 * stays the job's), or `none` when the host has none of them.
 */
const DETACH_FUNCTIONS = `if command -v setsid >/dev/null 2>&1; then detach=setsid
elif command -v perl >/dev/null 2>&1; then detach=perl
elif command -v python3 >/dev/null 2>&1; then detach=python3
else detach=none; fi`;

/** What the target is: `HOME`, `BOOT`, `HOST`, `SETSID`, `DETACH` (see DETACH_FUNCTIONS), `SHELL` and `SYSTEM` lines. */
export const WORKSTATION_PROBE_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
${DETACH_FUNCTIONS}
read_boot; read_host
printf 'HOME %s\\nBOOT %s\\nHOST %s\\n' "$HOME" "$boot" "$host"
printf 'SETSID %s\\nDETACH %s\\n' "$(command -v setsid || true)" "$detach"
printf 'SHELL %s\\n' "$(command -v sh || true)"
printf 'SYSTEM %s\\n' "$(uname -sr)"
`;

/** Check (and create, 0700) the work directory $1 as a submit would: exit 23 when it is not to be trusted. */
export const WORKSTATION_WORKDIR_SCRIPT = `${TRUSTED_DIRECTORY_FUNCTIONS}
umask 077
make_trusted_dir "$1" 'work directory'
`;

/**
 * Prepare the job directory and start the job detached (a session of its own, by setsid or
 * perl's or python3's setsid(2): with none of them the submit is refused, exit 21, before
 * anything is made; all output to the log, stdin from /dev/null), so it survives the submitter and its
 * connection. Arguments: $1 work directory, $2 job id, $3 payload lengths (see
 * PREPARE_JOB_DIRECTORY), $4 working directory (empty: the job directory), $5 the container
 * runtime (empty: no container), $6 its image, $7 the number of bind sources, then the sources
 * (`container_check`); then the job's argv (in a container, the launcher's arguments after the
 * runtime and the image). A working directory that does not exist, a container whose runtime,
 * image or bind sources are missing (exit 30–32, naming the field) are refused before anything
 * is written, and a work directory another user could change (exit 23) before anything is made. The log is opened
 * inside the checked job directory by its relative name. The wrapper, and so every process of
 * the job, carries the job's marker `YONDER_JOB_ID=<id>` in its environment, by which a cancel
 * finds them all. Any later failure removes the job directory before it says why (the submitter
 * may be gone, and a message to it may end the script by SIGPIPE); on its way to starting the job
 * the script writes nothing to stdout or stderr. Prints `DIR`, `PID`, `START`, `BOOT` and `HOST`,
 * and for a container `IMAGE <id> <digest>`.
 */
export const WORKSTATION_SUBMIT_SCRIPT = `set -u
${PROCESS_IDENTITY_FUNCTIONS}
${CONTAINER_CHECK_FUNCTIONS}
${DETACH_FUNCTIONS}
w=$1; id=$2; lengths=$3; cwd=$4; crt=$5; cimage=$6; csources=$7; shift 7
if [ "$detach" = none ]; then echo "yonder: the host has none of setsid, perl or python3, so a job cannot be started in a process group of its own (nor a cancel reach all of it): install setsid (util-linux)" >&2; exit 21; fi
if [ -n "$cwd" ] && [ ! -d "$cwd" ]; then echo "yonder: the job's working directory $cwd does not exist" >&2; exit 20; fi
if [ -n "$crt" ]; then
  container_check "$crt" "$cimage" "$csources" "$@" || exit $?
  shift "$csources"
  launch='${CONTAINER_LAUNCH_SCRIPT.replaceAll("'", "'\\''")}'
  set -- sh -c "$launch" yonder-container "$crt" "$container_ref" "$@"
fi
fallback=$w
${PREPARE_JOB_DIRECTORY}
if ! { private_dirs 1 "$d" && enter_private "$d" && ( set -C; : > job.log ) 2>/dev/null && { command exec 3>> job.log; } 2>/dev/null; }; then rm -rf -- "$d"; exit 18; fi
# The image, kept beside the job for a recovery that finds it when this answer is lost.
if [ -n "$crt" ] && ! ( set -C; printf '%s %s\n' "$container_id" "$container_digest" > image ) 2>/dev/null; then rm -rf -- "$d"; exit 18; fi
[ -n "$cwd" ] || cwd=$d
if ! cd -- "$cwd" 2>/dev/null; then rm -rf -- "$d"; echo "yonder: cannot enter the working directory $cwd" >&2; exit 20; fi
wrapper='${JOB_WRAPPER_SCRIPT.replaceAll("'", "'\\''")}'
case $detach in
  setsid) set -- setsid sh -c "$wrapper" yonder-job "$d" "$@" ;;
  perl) set -- perl -e 'use POSIX (); defined(POSIX::setsid()) or exit 125; exec { $ARGV[0] } @ARGV; exit 127' -- sh -c "$wrapper" yonder-job "$d" "$@" ;;
  *) set -- python3 -c 'import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' sh -c "$wrapper" yonder-job "$d" "$@" ;;
esac
YONDER_JOB_ID=$id "$@" < /dev/null >&3 2>&3 3>&- &
pid=$!
# Answer once the wrapper leads its own session and process group (a cancel right after the
# submit signals that group), or has ended; bounded, in case it never gets that far.
n=0
while proc_stat "/proc/$pid/stat" && [ "$ps_group" != "$pid" ] && [ "$ps_state" != Z ] && [ "$n" -lt 650 ]; do
  n=$((n + 1))
  [ "$n" -le 50 ] || sleep 0.005 2>/dev/null || { sleep 1; n=$((n + 200)); }
done
exec 3>&-
proc_stat "/proc/$pid/stat" || ps_start=0
read_boot; read_host
printf 'DIR %s\\nPID %s\\nSTART %s\\nBOOT %s\\nHOST %s\\n' "$d" "$pid" "$ps_start" "$boot" "$host"
if [ -n "$crt" ]; then printf 'IMAGE %s %s\\n' "$container_id" "$container_digest"; fi
`;

/**
 * Observe jobs: arguments are (job directory, pid, start time, marker) quadruples; the marker is
 * the job's id when a cancel was asked for it, else empty. Each job directory is read only when
 * it is a private directory of the user's, entered and by relative names. Prints `BOOT` and
 * `HOST`, then per job one of:
 * - `<index> EXIT <code> <started> <ended>`: the wrapper recorded how it ended (times `-` when
 *   not recorded);
 * - `<index> RUNNING <started> [<pid>…]`: the wrapper runs, with its recorded identity (the pids:
 *   processes of the job that outlived a cancel's SIGKILL, as that cancel recorded them);
 * - `<index> JOBSTOPPED <started> <pid>`: the wrapper runs and the job's own process (pid) is
 *   stopped (state T: SIGSTOP, SIGTSTP, a debugger);
 * - `<index> STOPPED <started>`: the wrapper is stopped (state T). When the job's own process
 *   has ended meanwhile, the wrapper is continued first so that it records the real exit (then
 *   the answer is EXIT);
 * - `<index> LEFT <code or -> <survived> <count> <pid>…`: a cancel was asked for, the wrapper is
 *   done, but processes carrying the job's marker still run (`survived` 1: they outlived SIGKILL);
 * - `<index> GONE` (or `GONE untrusted`: the job directory is not a private directory of the
 *   user's, so nothing in it is believed). The secrets file of a job that no longer runs is
 *   deleted.
 * The exit-code file is read again after a process is found gone: it may have ended in between.
 */
export const WORKSTATION_POLL_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
${JOB_PROCESS_FUNCTIONS}
${PRIVATE_DIRECTORY_FUNCTIONS}
${JOB_FILE_FUNCTIONS}
me=$(id -u)
read_boot; read_host
printf 'BOOT %s\\nHOST %s\\n' "$boot" "$host"
scanned=
started_word() { started=-; [ "$trusted" = 1 ] && read_word started-at && started=\${word:--}; }
left_over() {
  [ -n "$1" ] || return 1
  [ -n "$scanned" ] || { scan_marked; scanned=1; }
  job_processes "$1" "$2" ''
  live_targets
  [ "$left_count" -gt 0 ]
}
survivors() { survived=; [ "$trusted" = 1 ] && read_word kill-survivors && survived=$word; }
left_line() {
  survivors; flag=0; [ -z "$survived" ] || flag=1
  printf '%s LEFT %s %s %s%s\\n' "$i" "$1" "$flag" "$left_count" "$left"
}
forget_secrets() { if [ "$trusted" = 1 ] && { [ -e secrets.sh ] || [ -L secrets.sh ]; }; then rm -f -- secrets.sh; fi; }
ended() {
  code=$word
  if left_over "$4" "$2"; then left_line "$code"; return; fi
  forget_secrets
  started_word
  read_word ended-at; ended=\${word:--}
  printf '%s EXIT %s %s %s\\n' "$i" "$code" "$started" "$ended"
}
job_stopped() {
  [ "$trusted" = 1 ] && read_word job.pid && job_pid=\${word%% *} && is_job "$job_pid" "\${word#* }" || return 1
  case $ps_state in T|t) return 0 ;; esac
  return 1
}
stopped() {
  if [ "$trusted" = 1 ] && read_word job.pid && ! is_job "\${word%% *}" "\${word#* }"; then
    kill -s CONT "$2" 2>/dev/null
    n=0
    while ! read_word exit-code && [ "$n" -lt 40 ] && is_job "$2" "$3"; do
      sleep 0.05 2>/dev/null || sleep 1
      n=$((n + 1))
    done
    if read_word exit-code; then ended "$@"; return; fi
  fi
  started_word
  printf '%s STOPPED %s\\n' "$i" "$started"
}
observe() {
  cd /
  trusted=0
  if enter_private "$1"; then trusted=1; fi
  if [ "$trusted" = 1 ] && read_word exit-code; then ended "$@"
  elif is_job "$2" "$3"; then
    case $ps_state in
      T|t) stopped "$@" ;;
      *) started_word; survivors
        if [ -z "$survived" ] && job_stopped; then printf '%s JOBSTOPPED %s %s\\n' "$i" "$started" "$job_pid"
        else printf '%s RUNNING %s%s\\n' "$i" "$started" "\${survived:+ $survived}"; fi ;;
    esac
  elif [ "$trusted" = 1 ] && read_word exit-code; then ended "$@"
  elif left_over "$4" "$2"; then left_line -
  elif [ "$trusted" = 1 ]; then forget_secrets; printf '%s GONE\\n' "$i"
  else printf '%s GONE untrusted\\n' "$i"; fi
}
private_dirs 4 "$@"
i=0
while [ $# -ge 4 ]; do
  observe "$1" "$2" "$3" "$4"
  shift 4
  i=$((i + 1))
done
`;

/**
 * Find jobs whose submit was interrupted (their submitters are gone): arguments are job
 * directories. Prints `BOOT` and `HOST`, then per job:
 * - `<index> ABANDONED`: there was no job directory, and now one holding only `.abandoned`
 *   takes its place (and is found again later): a submit script still on its way finds it
 *   there and starts nothing (a job directory is never reused), so the job never starts; a work
 *   directory that is not to be trusted gets none (`NODIR`);
 * - `<index> NODIR`: none, and none could be put in its place (or the submit made it just now);
 * - `<index> UNTRUSTED`: a directory is there, but not a private one of the user's: no submit
 *   of theirs made it (a submit makes it 0700 at once), and nothing in it is believed;
 * - `<index> NOPID`: the directory, without a readable wrapper.pid yet;
 * - `<index> DEAD`: it started, then died without an exit status;
 * - `<index> FOUND <pid> <start time> <image id> <image digest>`: the start time is the one the
 *   wrapper recorded for itself, never that of whatever process has its pid now; the image as
 *   the submit recorded it for a job in a container (`-` when none).
 */
export const WORKSTATION_RECOVER_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
${TRUSTED_DIRECTORY_FUNCTIONS}
${PRIVATE_DIRECTORY_FUNCTIONS}
${JOB_FILE_FUNCTIONS}
umask 077
read_boot; read_host
printf 'BOOT %s\\nHOST %s\\n' "$boot" "$host"
private_dirs 1 "$@"
abandon() {
  w=\${1%/*}
  [ -n "$w" ] && [ "$w" != "$1" ] && make_trusted_dir "$w" 'work directory' 2>/dev/null &&
    mkdir -m 700 -- "$1" 2>/dev/null && cd -P -- "$1" && [ -O . ] && ( set -C; : > .abandoned )
}
i=0
for d in "$@"; do
  cd /
  pid= start=
  if [ ! -e "$d" ] && [ ! -L "$d" ]; then
    if abandon "$d"; then printf '%s ABANDONED\\n' "$i"; else printf '%s NODIR\\n' "$i"; fi
  elif ! enter_private "$d"; then printf '%s UNTRUSTED\\n' "$i"
  elif [ -f .abandoned ]; then printf '%s ABANDONED\\n' "$i"
  else
    { read -r pid start < wrapper.pid; } 2>/dev/null
    case $pid in
      ''|*[!0-9]*) printf '%s NOPID\\n' "$i" ;;
      *)
        # An old wrapper wrote only its pid: then take the live process's start time, if any.
        if [ -z "$start" ]; then if proc_stat "/proc/$pid/stat"; then start=$ps_start; else start=0; fi; fi
        case $start in ''|*[!0-9]*) start=0 ;; esac
        if is_job "$pid" "$start" || read_word exit-code; then
          cid= cdigest=; if [ -f image ] && [ ! -L image ]; then { read -r cid cdigest < image; } 2>/dev/null; fi
          printf '%s FOUND %s %s %s %s\\n' "$i" "$pid" "$start" "\${cid:--}" "\${cdigest:--}"
        else printf '%s DEAD\\n' "$i"; fi ;;
    esac
  fi
  i=$((i + 1))
done
`;

/**
 * Stop jobs, every process of each: $1 the signal (TERM or KILL), then (job directory, pid,
 * start time, boot id, host, job id) sextuples (an empty host is not checked). The wrapper is
 * signalled only after its identity is checked again right before; its process group only when
 * it leads it; pids of 1 and below never. Besides the group, every process carrying the job's
 * marker (`YONDER_JOB_ID=<id>`, inherited through `setsid`) is signalled, each after its own
 * start time is checked again, then continued (a stopped process acts on the signal).
 * KILL spares the wrapper, which then records the job's end, and is repeated for what is left or
 * was made meanwhile (a few rounds, each waiting up to a second); what still runs after it is
 * reported, and written to the job directory (`kill-survivors`) for the polls. Prints per job
 * `<index> SENT`, `<index> NOTRUNNING` (nothing of it runs — its secrets file, if any, is
 * deleted — or only its wrapper, after the job has run: the job ended on its own and the
 * wrapper is recording it; nothing is signalled then), `<index> FAILED`, or
 * `<index> SURVIVED <count> <pid>…`.
 */
export const WORKSTATION_CANCEL_SCRIPT = `${PROCESS_IDENTITY_FUNCTIONS}
${JOB_PROCESS_FUNCTIONS}
${PRIVATE_DIRECTORY_FUNCTIONS}
${JOB_FILE_FUNCTIONS}
me=$(id -u)
sig=$1; shift
read_boot; read_host
private_dirs 6 "$@"
scan_marked
leader_of() {
  leader= group=
  if is_job "$1" "$2"; then leader=$1; if [ "$ps_group" = "$1" ]; then group=$1; fi; fi
}
terminate() {
  # A group as \`kill -TERM -PGID\`: busybox's kill takes \`--\` for a pid (and fails, having sent).
  if [ -n "$group" ]; then kill -TERM "-$group" 2>/dev/null; ok=$?; kill -CONT "-$group" 2>/dev/null
  elif [ -n "$leader" ]; then kill -s TERM "$leader" 2>/dev/null; ok=$?; kill -s CONT "$leader" 2>/dev/null
  else ok=1; fi
  signal_targets TERM
  if [ "$ok" = 0 ] || [ "$sent" -gt 0 ]; then printf '%s SENT\\n' "$i"; else printf '%s FAILED\\n' "$i"; fi
}
kill_all() {
  round=0
  while :; do
    signal_targets KILL
    if [ -n "$leader" ]; then kill -s CONT "$leader" 2>/dev/null; fi
    n=0; live_targets
    while [ "$left_count" -gt 0 ] && [ "$n" -lt 20 ]; do
      sleep 0.05 2>/dev/null || sleep 1
      n=$((n + 1)); live_targets
    done
    round=$((round + 1))
    [ "$round" -lt 4 ] || break
    scan_marked
    leader_of "$2" "$3"
    job_processes "$6" "$2" "$group"
    [ -n "$targets" ] || { left_count=0; break; }
  done
  # What outlived SIGKILL is written down in the job directory, for the polls to report.
  if [ "$left_count" -gt 0 ] && enter_private "$1"; then put kill-survivors "\${left# }"; fi
  if [ "$left_count" -gt 0 ]; then printf '%s SURVIVED %s%s\\n' "$i" "$left_count" "$left"
  else printf '%s SENT\\n' "$i"; fi
}
job_ran() {
  enter_private "$1" && [ -f job.pid ]; jr=$?; cd /; return "$jr"
}
stop_job() {
  cd /
  if [ "$4" != "$boot" ] || { [ -n "$5" ] && [ "$5" != "$host" ]; }; then printf '%s NOTRUNNING\\n' "$i"; return; fi
  leader_of "$2" "$3"
  job_processes "$6" "$2" "$group"
  if [ -z "$leader" ] && [ -z "$targets" ]; then
    if enter_private "$1" && { [ -e secrets.sh ] || [ -L secrets.sh ]; }; then rm -f -- secrets.sh; fi
    printf '%s NOTRUNNING\\n' "$i"
  elif [ -z "$targets" ] && job_ran "$1"; then
    # Only the wrapper is left, and the job has run: it ended on its own before this signal
    # (the wrapper is recording that), so nothing of it is reached.
    printf '%s NOTRUNNING\\n' "$i"
  elif [ "$sig" = KILL ]; then kill_all "$@"
  else terminate; fi
}
i=0
while [ $# -ge 6 ]; do
  stop_job "$1" "$2" "$3" "$4" "$5" "$6"
  shift 6
  i=$((i + 1))
done
`;
