/**
 * The sh functions that find every process of a workstation job — its wrapper's process group
 * and every process carrying the job's marker (`YONDER_JOB_ID=<id>`, which the wrapper's
 * descendants inherit even after `setsid`) — and signal them, each only after re-checking its
 * identity. They need PROCESS_IDENTITY_FUNCTIONS before them.
 */

/**
 * Defines, for a POSIX sh script:
 * - `scan_marked`: sets `marked` to `/proc/PID/environ:YONDER_JOB_ID=ID` lines, one for every
 *   process this user may read whose environment holds a marker: one `grep` over
 *   /proc/*\/environ (NUL-separated records, `-z`), never one command per process.
 * - `job_processes ID LEADER`: sets `targets` to ` PID:START` words: the processes of the job
 *   `ID` (marked with it and this user's, or in the process group of LEADER when LEADER is a verified group
 *   leader, else empty), never LEADER itself, pid 1 or below, or this script. Each carries its
 *   start time as read just now, so a pid recycled before the signal is never signalled.
 * - `signal_targets SIGNAL`: sends SIGNAL (then CONT, so a stopped process acts on it) to each of
 *   `targets` that still has its start time; sets `sent` to how many were signalled.
 * - `live_targets`: sets `left` to the pids of `targets` still running (not zombies) and
 *   `left_count` to their number.
 */
export const JOB_PROCESS_FUNCTIONS = `scan_marked() {
  marked=$(grep -a -H -o -x -z -E 'YONDER_JOB_ID=[0-9a-f]+' /proc/[0-9]*/environ 2>/dev/null | tr '\\000' '\\n')
}
job_processes() {
  targets=
  while IFS= read -r jp_line; do
    case $jp_line in "/proc/"*"/environ:YONDER_JOB_ID=$1") ;; *) continue ;; esac
    jp_pid=\${jp_line#/proc/}; jp_pid=\${jp_pid%%/*}
    # A marker is the job's only in a process of this user: anyone may set one in their own.
    [ -O "/proc/$jp_pid" ] || continue
    jp_add "$jp_pid" "$2"
  done <<JP_EOF
$marked
JP_EOF
  [ -n "$2" ] || return 0
  for jp_file in /proc/[0-9]*/stat; do
    proc_stat "$jp_file" || continue
    [ "$ps_group" = "$2" ] || continue
    jp_pid=\${jp_file#/proc/}; jp_pid=\${jp_pid%/stat}
    jp_add "$jp_pid" "$2"
  done
}
jp_add() {
  case $1 in ''|*[!0-9]*) return 0 ;; esac
  [ "$1" -gt 1 ] && [ "$1" != "$$" ] && [ "$1" != "$2" ] || return 0
  case "$targets " in *" $1:"*) return 0 ;; esac
  proc_stat "/proc/$1/stat" || return 0
  case $ps_state in Z|X) return 0 ;; esac
  targets="$targets $1:$ps_start"
}
signal_targets() {
  sent=0
  for st_word in $targets; do
    is_job "\${st_word%%:*}" "\${st_word#*:}" || continue
    if kill -s "$1" "\${st_word%%:*}" 2>/dev/null; then sent=$((sent + 1)); fi
    kill -s CONT "\${st_word%%:*}" 2>/dev/null
  done
}
live_targets() {
  left= left_count=0
  for lt_word in $targets; do
    is_job "\${lt_word%%:*}" "\${lt_word#*:}" || continue
    left="$left \${lt_word%%:*}"; left_count=$((left_count + 1))
  done
}`;
