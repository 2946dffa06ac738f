#!/usr/bin/env bash
# One-node Grid Engine (Debian 12's Son of Grid Engine 8.1.9) test cluster, for CI
# (scripts/test-all.sh) and the tests of @yonder/backend-gridengine. Debian 12, run as
# root, no systemd needed: sge_qmaster and sge_execd are started directly and stopped
# through their pid files.
#
# Usage: scripts/gridengine-cluster.sh <command>
#   install   apt-get install the packages (skipped when already installed)
#   start     install if needed, configure the cell, start sge_qmaster and sge_execd,
#             wait until the queue instance takes jobs. Does nothing when the cluster is
#             already up and configured.
#   stop      stop sge_execd, then sge_qmaster (running jobs' shepherds keep running)
#   stop-qmaster / start-qmaster   only the qmaster (tests of an unreachable scheduler)
#   status    exit 0 iff the qmaster answers and the queue instance takes jobs
#
# Cell `default` under SGE_ROOT=/var/lib/gridengine, qmaster and exec host = this host
# (`hostname`), queue all.q with one slot per core, parallel environment `smp`
# (allocation_rule $pe_slots) in all.q, no load threshold (a loaded machine would put the
# queue in alarm state and start nothing), min_uid/min_gid 0 (root may submit), no mail,
# accounting flushed at once, a scheduler that runs every second.
# A job's working directory must exist and be writable by its user (qsub -wd).
#
# Environment: YONDER_GRIDENGINE_QUIET=1 prints only warnings and errors.
set -euo pipefail

readonly PACKAGES=(gridengine-master gridengine-exec gridengine-client)
readonly SGE_ROOT=/var/lib/gridengine
readonly SGE_CELL=default
readonly COMMON=$SGE_ROOT/$SGE_CELL/common
readonly SPOOL=/var/spool/gridengine
readonly QMASTER_PID=$SPOOL/qmaster/qmaster.pid
readonly QUEUE=all.q
readonly PE=smp
export SGE_ROOT SGE_CELL DEBIAN_FRONTEND=noninteractive
# Client settings of the caller's that would change what the commands below print.
unset SGE_QMASTER_PORT SGE_EXECD_PORT SGE_LONG_QNAMES SGE_SINGLE_LINE 2>/dev/null || true

LOG_NAME=gridengine-cluster
LOG_QUIET=${YONDER_GRIDENGINE_QUIET:-0}
# shellcheck source=lib/log.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"

HOST=$(hostname)

dump_logs() {
  local f
  for f in "$SPOOL/qmaster/messages" "$SPOOL"/execd/*/messages; do
    if [[ -s $f ]]; then
      printf '\n----- last lines of %s -----\n' "$f" >&2
      tail -n 25 "$f" >&2 || true
    fi
  done
}

need_root() {
  [[ $(id -u) == 0 ]] || { echo "gridengine-cluster.sh must run as root" >&2; exit 1; }
}

# proc_alive PID: the process exists and is not a zombie.
proc_alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
  [[ -n $state && $state != Z && $state != X ]]
}

# pid_of PIDFILE COMM: the live pid the file names, if its command is COMM.
pid_of() {
  local file=$1 comm=$2 pid
  [[ -s $file ]] || return 1
  pid=$(tr -dc '0-9' <"$file")
  [[ -n $pid ]] && proc_alive "$pid" || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]] || return 1
  echo "$pid"
}

# The execd's spool directory is named after the host as the qmaster resolved it.
execd_pid() {
  local f pid
  for f in "$SPOOL"/execd/*/execd.pid; do
    [[ -e $f ]] || continue
    pid=$(pid_of "$f" sge_execd) && { echo "$pid"; return 0; }
  done
  return 1
}
qmaster_pid() { pid_of "$QMASTER_PID" sge_qmaster; }

# stop_pid NAME PID: SIGTERM, wait up to 30 s (the qmaster takes 7-10 s), then SIGKILL.
stop_pid() {
  local name=$1 pid=$2 i
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    proc_alive "$pid" || return 0
    sleep 0.1
  done
  warn "$name (pid $pid) ignored SIGTERM for 30 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    proc_alive "$pid" || return 0
    sleep 0.1
  done
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s.
wait_for() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$(($(date +%s) + timeout))
  until "$@" >/dev/null 2>&1; do
    (($(date +%s) < deadline)) || die "timed out after ${timeout}s waiting for $what"
    sleep 0.2
  done
}

# ------------------------------------------------------------------ install

packages_installed() {
  local p
  for p in "${PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || return 1
  done
  [[ -x /usr/sbin/sge_qmaster && -x /usr/sbin/sge_execd && -x /usr/bin/qsub ]]
}

ge_version() { dpkg-query -W -f='${Version}' gridengine-client 2>/dev/null || echo '?'; }

apt_get() {
  if [[ $LOG_QUIET == 1 ]]; then
    local out rc=0
    out=$(mktemp)
    apt-get "$@" </dev/null >"$out" 2>&1 || rc=$?
    ((rc == 0)) || tail -n 40 "$out" >&2
    rm -f "$out"
    return $rc
  fi
  apt-get "$@" </dev/null >&2
}

cmd_install() {
  need_root
  if packages_installed; then
    log "packages already installed (gridengine $(ge_version))"
    return 0
  fi
  local added_policy=0 rc=0
  # The packages' init scripts must not start the daemons (this script does, configured).
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  # The postinst configures the cell (SGE_ROOT, cell default, BerkeleyDB spool) only when
  # told to; the master's name is written below (act_qmaster).
  debconf-set-selections <<EOF
gridengine-common shared/gridengineconfig boolean true
gridengine-common shared/gridenginecell string $SGE_CELL
gridengine-common shared/gridenginemaster string $HOST
EOF
  log "apt-get install ${PACKAGES[*]}"
  apt_get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${PACKAGES[@]}" || rc=$?
  if ((rc != 0)); then
    log "apt-get install failed (rc $rc); retrying after apt-get update"
    apt_get update -qq
    rc=0
    apt_get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${PACKAGES[@]}" || rc=$?
  fi
  ((added_policy)) && rm -f /usr/sbin/policy-rc.d
  ((rc == 0)) || die "apt-get install failed (rc $rc)"
  log "installed gridengine $(ge_version)"
}

# ------------------------------------------------------------------ configuration

# write_if_changed FILE: stdin -> FILE (owned by sgeadmin); returns 0 if FILE changed.
write_if_changed() {
  local file=$1 tmp
  tmp=$(mktemp "$file.XXXXXX")
  cat >"$tmp"
  chown sgeadmin:sgeadmin "$tmp"
  chmod 0644 "$tmp"
  if [[ -f $file ]] && cmp -s "$tmp" "$file"; then
    rm -f "$tmp"
    return 1
  fi
  mv -f "$tmp" "$file"
  return 0
}

CELL_CHANGED=0
prepare_cell() {
  id sgeadmin >/dev/null 2>&1 || die "user sgeadmin missing: are the packages installed (and configured)?"
  [[ -s $COMMON/bootstrap ]] || die "$COMMON/bootstrap missing: the gridengine-common postinst did not configure the cell (debconf shared/gridengineconfig)"
  # The host resolves to 127.0.0.1, which resolves back to `localhost`: without this alias
  # the qmaster calls itself localhost and refuses every client ("access denied").
  if write_if_changed "$COMMON/host_aliases" <<<"$HOST localhost"; then CELL_CHANGED=1; fi
  if write_if_changed "$COMMON/act_qmaster" <<<"$HOST"; then CELL_CHANGED=1; fi
}

# daemon PROGRAM: start a Grid Engine daemon in a clean environment, as an init system would:
# jobs inherit the execd's environment, and the caller's (a CI runner's, a developer's shell)
# must not reach them.
daemon() {
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    SGE_ROOT="$SGE_ROOT" SGE_CELL="$SGE_CELL" "$1" </dev/null >/dev/null 2>&1
}

qmaster_up() { timeout 15 qconf -sss >/dev/null 2>&1; }

start_qmaster() {
  if qmaster_pid >/dev/null && qmaster_up; then
    log "sge_qmaster already running"
    return 0
  fi
  local pid
  if pid=$(qmaster_pid); then stop_pid sge_qmaster "$pid"; fi
  log "starting sge_qmaster"
  daemon /usr/sbin/sge_qmaster || die "sge_qmaster failed to start"
  wait_for 60 "sge_qmaster (qconf -sss)" qmaster_up
}

# apply_conf WHAT SHOW_ARGS MODIFY_FLAG FILE_NAME SED_SCRIPT: show a configuration, edit it
# with sed, and load it back only if that changed it. Returns 0 if it changed.
apply_conf() {
  local what=$1 show=$2 modify=$3 name=$4 script=$5 dir cur new
  dir=$(mktemp -d)
  # shellcheck disable=SC2086
  qconf $show >"$dir/cur" || die "qconf $show failed"
  sed -e "$script" "$dir/cur" >"$dir/$name"
  if cmp -s "$dir/cur" "$dir/$name"; then
    rm -rf "$dir"
    return 1
  fi
  log "changing the $what"
  qconf "$modify" "$dir/$name" >/dev/null || { rm -rf "$dir"; die "qconf $modify ($what) failed"; }
  rm -rf "$dir"
  return 0
}

GLOBAL_CHANGED=0
configure() {
  local slots dir
  slots=$(nproc)
  qconf -ss 2>/dev/null | grep -qx "$HOST" || { log "adding $HOST as a submit host"; qconf -as "$HOST" >/dev/null; }
  # Root may submit (min_uid/min_gid 0: must be set before the execd starts), no mail,
  # accounting written at once.
  if apply_conf "global configuration" "-sconf global" -Mconf global '
    s/^min_uid .*/min_uid                      0/
    s/^min_gid .*/min_gid                      0/
    s/^administrator_mail .*/administrator_mail           none/
    /^reporting_params/{/accounting_flush_time/!s/\(accounting=true\)/\1 accounting_flush_time=00:00:00/}
  '; then GLOBAL_CHANGED=1; fi
  apply_conf "scheduler configuration" -ssconf -Msconf sched '
    s/^schedule_interval .*/schedule_interval                 0:0:1/
    s/^flush_submit_sec .*/flush_submit_sec                  1/
    s/^flush_finish_sec .*/flush_finish_sec                  1/
  ' || true
  if ! qconf -se "$HOST" >/dev/null 2>&1; then
    log "adding $HOST as an execution host"
    dir=$(mktemp -d)
    printf 'hostname %s\nload_scaling NONE\ncomplex_values NONE\nuser_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\nusage_scaling NONE\nreport_variables NONE\n' \
      "$HOST" >"$dir/$HOST"
    qconf -Ae "$dir/$HOST" >/dev/null || die "qconf -Ae failed"
    rm -rf "$dir"
  fi
  if ! qconf -sp "$PE" >/dev/null 2>&1; then
    log "adding the parallel environment $PE"
    dir=$(mktemp -d)
    printf 'pe_name %s\nslots 999\nuser_lists NONE\nxuser_lists NONE\nstart_proc_args NONE\nstop_proc_args NONE\nallocation_rule $pe_slots\ncontrol_slaves FALSE\njob_is_first_task TRUE\nurgency_slots min\naccounting_summary FALSE\nqsort_args NONE\n' \
      "$PE" >"$dir/$PE"
    qconf -Ap "$dir/$PE" >/dev/null || die "qconf -Ap failed"
    rm -rf "$dir"
  fi
  if ! qconf -sq "$QUEUE" >/dev/null 2>&1; then
    log "adding the queue $QUEUE"
    dir=$(mktemp -d)
    qconf -sq | sed -e "s/^qname .*/qname $QUEUE/" -e "s/^hostlist .*/hostlist $HOST/" \
      -e "s/^slots .*/slots $slots/" -e "s/^pe_list .*/pe_list $PE/" \
      -e "s/^load_thresholds .*/load_thresholds NONE/" >"$dir/$QUEUE"
    qconf -Aq "$dir/$QUEUE" >/dev/null || die "qconf -Aq failed"
    rm -rf "$dir"
  else
    apply_conf "queue $QUEUE" "-sq $QUEUE" -Mq "$QUEUE" "
      s/^hostlist .*/hostlist              $HOST/
      s/^slots .*/slots                 $slots/
      s/^pe_list .*/pe_list               $PE/
      s/^load_thresholds .*/load_thresholds       NONE/
    " || true
  fi
}

queue_ready() {
  # The queue instance reports a load (the execd is up) and is in no state (E, a, d, u...).
  local line
  line=$(timeout 15 qstat -f -q "$QUEUE@$HOST" 2>/dev/null | grep "^$QUEUE@") || return 1
  [[ $line != *-NA-* ]] || return 1
  [[ $(awk '{print $6}' <<<"$line") == '' ]]
}

start_execd() {
  if execd_pid >/dev/null; then
    log "sge_execd already running"
  else
    log "starting sge_execd"
    daemon /usr/sbin/sge_execd || die "sge_execd failed to start"
  fi
  wait_for 60 "the queue instance $QUEUE@$HOST to report a load" queue_ready_or_clear
}

# A queue instance left in error state (E) by an earlier failure is cleared once.
queue_ready_or_clear() {
  queue_ready && return 0
  local line
  line=$(timeout 15 qstat -f -q "$QUEUE@$HOST" 2>/dev/null | grep "^$QUEUE@") || return 1
  if [[ $line != *-NA-* && $(awk '{print $6}' <<<"$line") == *E* ]]; then
    log "clearing the error state of $QUEUE@$HOST"
    qmod -c "$QUEUE@$HOST" >/dev/null 2>&1 || true
  fi
  return 1
}

healthy() { qmaster_pid >/dev/null && execd_pid >/dev/null && qmaster_up && queue_ready; }

cmd_start() {
  need_root
  cmd_install
  local t=$SECONDS
  prepare_cell
  if ((CELL_CHANGED)); then
    local pid
    if pid=$(execd_pid); then stop_pid sge_execd "$pid"; fi
    if pid=$(qmaster_pid); then stop_pid sge_qmaster "$pid"; fi
  fi
  start_qmaster
  configure
  if ((GLOBAL_CHANGED)); then
    # The global configuration changed: an execd started before reads it only at its start.
    local pid
    if pid=$(execd_pid); then
      log "global configuration changed: restarting sge_execd"
      stop_pid sge_execd "$pid"
    fi
  fi
  if healthy; then
    log "cluster already running and configured; nothing to do"
    return 0
  fi
  start_execd
  log "grid engine is up on $HOST ($((SECONDS - t))s)"
}

cmd_stop() {
  need_root
  local pid
  if pid=$(execd_pid); then stop_pid sge_execd "$pid"; else log "sge_execd is not running"; fi
  if pid=$(qmaster_pid); then stop_pid sge_qmaster "$pid"; else log "sge_qmaster is not running"; fi
  log "stopped"
}

cmd_stop_qmaster() {
  need_root
  local pid
  if pid=$(qmaster_pid); then stop_pid sge_qmaster "$pid"; else log "sge_qmaster is not running"; fi
}

cmd_start_qmaster() {
  need_root
  start_qmaster
  start_execd
}

cmd_status() {
  local rc=0 pid
  if pid=$(qmaster_pid); then echo "sge_qmaster: running (pid $pid)"; else echo "sge_qmaster: not running"; rc=1; fi
  if pid=$(execd_pid); then echo "sge_execd: running (pid $pid)"; else echo "sge_execd: not running"; rc=1; fi
  if ((rc == 0)); then
    if queue_ready; then echo "queue $QUEUE@$HOST: ready"; else echo "queue $QUEUE@$HOST: not ready"; rc=1; fi
  fi
  if ((rc == 0)); then echo "status: up"; else echo "status: down"; fi
  return $rc
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
}

main() {
  case ${1:-} in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    stop-qmaster) cmd_stop_qmaster ;;
    start-qmaster) cmd_start_qmaster ;;
    status) cmd_status ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
  esac
}

main "$@"
