/**
 * The sh functions that read a process's identity (pid + start time + boot id, and the host)
 * from /proc without forking, shared by the job wrapper and the workstation scripts.
 */

/**
 * Defines, for a POSIX sh script:
 * - `proc_stat FILE`: sets `ps_state`, `ps_group` (field 5, the process group) and `ps_start`
 *   (field 22, clock ticks since boot) from a /proc/PID/stat text. The command name may hold spaces, `)`, `) ` and line breaks, so the
 *   fields are read after the LAST `) `, as `parseProcStat` does. Fails (both empty) when the
 *   file cannot be read or does not look like one.
 * - `is_job PID START`: succeeds only when PID is a number above 1 naming a live process (not a
 *   zombie) that started at START: a recycled pid has another start time and is not the job.
 * - `read_boot`, `read_host`: set `boot` (the boot id, `unknown` without one) and `host` (the
 *   node name, as `os.hostname()` gives it).
 * Reads use the `read` builtin, never `$(cat …)`: a poll of many jobs forks nothing per job.
 */
export const PROCESS_IDENTITY_FUNCTIONS = `proc_stat() {
  ps_state= ps_group= ps_start= ps_text= ps_line=
  { while IFS= read -r ps_line || [ -n "$ps_line" ]; do ps_text="$ps_text$ps_line
"; ps_line=; done < "$1"; } 2>/dev/null
  case $ps_text in *') '*) ;; *) return 1 ;; esac
  set -f
  set -- \${ps_text##*) }
  set +f
  [ $# -ge 20 ] || return 1
  case $1 in ''|*[!A-Za-z]*) return 1 ;; esac
  ps_state=$1 ps_group=$3
  shift 19
  case $1 in ''|*[!0-9]*) ps_state= ps_group=; return 1 ;; esac
  ps_start=$1
}
is_job() {
  case $1 in ''|*[!0-9]*) return 1 ;; esac
  [ "\${#1}" -le 10 ] && [ "$1" -gt 1 ] || return 1
  proc_stat "/proc/$1/stat" || return 1
  [ "$ps_start" = "$2" ] && [ "$ps_state" != Z ] && [ "$ps_state" != X ]
}
read_boot() {
  boot=
  { IFS= read -r boot < /proc/sys/kernel/random/boot_id; } 2>/dev/null
  [ -n "$boot" ] || boot=unknown
}
read_host() {
  host=
  { IFS= read -r host < /proc/sys/kernel/hostname; } 2>/dev/null
  [ -n "$host" ] || host=$(uname -n 2>/dev/null)
}`;
