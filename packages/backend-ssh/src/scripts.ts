import { JOB_WRAPPER_SCRIPT, PREPARE_JOB_DIRECTORY } from '@yonder/core';

/** `identity STAT`: prints the state letter and start time from /proc/PID/stat text. */
const IDENTITY_FUNCTION = `identity() {
  rest=\${1##*) }
  set -f
  set -- $rest
  set +f
  st=$1
  shift 19
  printf '%s %s' "$st" "$1"
}`;

/**
 * Prepare the job directory and start the job detached (own session, all output to the log,
 * stdin from /dev/null), so it survives the connection dropping. Arguments: $1 work directory
 * (empty: $HOME/.yonder/jobs), $2 job id, $3 payload lengths, $4 working directory (empty: the
 * job directory); then the job's argv. Prints `DIR`, `PID`, `START`, `BOOT` lines.
 */
export const SSH_SUBMIT_SCRIPT = `set -u
w=$1; id=$2; lengths=$3; cwd=$4; shift 4
fallback="$HOME/.yonder/jobs"
${PREPARE_JOB_DIRECTORY}
[ -n "$cwd" ] || cwd=$d
if ! cd -- "$cwd" 2>/dev/null; then echo "yonder: cannot enter the working directory $cwd" >&2; rm -rf -- "$d"; exit 20; fi
: > "$d/job.log"
wrapper='${JOB_WRAPPER_SCRIPT.replaceAll("'", "'\\''")}'
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c "$wrapper" yonder-job "$d" "$@" < /dev/null >> "$d/job.log" 2>&1 &
else
  nohup sh -c "$wrapper" yonder-job "$d" "$@" < /dev/null >> "$d/job.log" 2>&1 &
fi
pid=$!
${IDENTITY_FUNCTION}
stat=$(cat "/proc/$pid/stat" 2>/dev/null || true)
start=0
if [ -n "$stat" ]; then start=$(identity "$stat" | cut -d' ' -f2); fi
printf 'DIR %s\\nPID %s\\nSTART %s\\nBOOT %s\\n' "$d" "$pid" "$start" "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)"
`;

/**
 * Observe jobs: arguments are (job directory, pid, start time) triples. Prints `BOOT <id>`,
 * then per job `<index> EXIT <code>`, `<index> RUNNING` or `<index> GONE`.
 */
export const SSH_POLL_SCRIPT = `${IDENTITY_FUNCTION}
printf 'BOOT %s\\n' "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)"
i=0
while [ $# -ge 3 ]; do
  d=$1; pid=$2; start=$3; shift 3
  if [ -f "$d/exit-code" ]; then
    printf '%s EXIT %s\\n' "$i" "$(cat "$d/exit-code")"
  else
    now=$(cat "/proc/$pid/stat" 2>/dev/null || true)
    seen=
    if [ -n "$now" ]; then seen=$(identity "$now"); fi
    case $seen in
      Z\\ *|X\\ *|'') alive=no ;;
      *) if [ "\${seen#* }" = "$start" ]; then alive=yes; else alive=no; fi ;;
    esac
    if [ "$alive" = yes ]; then printf '%s RUNNING\\n' "$i"
    elif [ -f "$d/exit-code" ]; then printf '%s EXIT %s\\n' "$i" "$(cat "$d/exit-code")"
    else printf '%s GONE\\n' "$i"; fi
  fi
  i=$((i + 1))
done
`;

/**
 * Find jobs whose submit was interrupted: arguments are job directories. Prints `BOOT <id>`,
 * then per job `<index> NODIR`, `<index> NOPID` or `<index> FOUND <pid> <start time>`.
 */
export const SSH_RECOVER_SCRIPT = `${IDENTITY_FUNCTION}
printf 'BOOT %s\\n' "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)"
i=0
for d in "$@"; do
  if [ ! -d "$d" ]; then printf '%s NODIR\\n' "$i"
  elif [ ! -f "$d/wrapper.pid" ]; then printf '%s NOPID\\n' "$i"
  else
    read -r pid start < "$d/wrapper.pid"
    if [ -z "\${start:-}" ]; then
      now=$(cat "/proc/$pid/stat" 2>/dev/null || true)
      start=0
      if [ -n "$now" ]; then start=$(identity "$now" | cut -d' ' -f2); fi
    fi
    now=$(cat "/proc/$pid/stat" 2>/dev/null || true)
    seen=
    if [ -n "$now" ]; then seen=$(identity "$now"); fi
    case $seen in
      Z\\ *|X\\ *|'') alive=no ;;
      *) if [ "\${seen#* }" = "$start" ]; then alive=yes; else alive=no; fi ;;
    esac
    if [ "$alive" = no ] && [ ! -f "$d/exit-code" ]; then printf '%s DEAD\\n' "$i"
    else printf '%s FOUND %s %s\\n' "$i" "$pid" "$start"; fi
  fi
  i=$((i + 1))
done
`;

/**
 * Signal jobs' process groups, each only after re-checking its identity: $1 the signal
 * (TERM or KILL), then (pid, start time) pairs. Prints `<index> SENT|NOTRUNNING|FAILED`.
 */
export const SSH_CANCEL_SCRIPT = `${IDENTITY_FUNCTION}
sig=$1; shift
i=0
while [ $# -ge 2 ]; do
  pid=$1; start=$2; shift 2
  now=$(cat "/proc/$pid/stat" 2>/dev/null || true)
  seen=
  if [ -n "$now" ]; then seen=$(identity "$now"); fi
  case $seen in
    Z\\ *|X\\ *|'') printf '%s NOTRUNNING\\n' "$i" ;;
    *)
      if [ "\${seen#* }" != "$start" ]; then printf '%s NOTRUNNING\\n' "$i"
      elif kill -s "$sig" -- "-$pid" 2>/dev/null || kill -s "$sig" "$pid" 2>/dev/null; then printf '%s SENT\\n' "$i"
      else printf '%s FAILED\\n' "$i"; fi ;;
  esac
  i=$((i + 1))
done
`;
