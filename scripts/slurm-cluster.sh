#!/usr/bin/env bash
# One-node Slurm 22.05 test cluster with accounting (slurmdbd + MariaDB), for
# CI (.ci/run) and the integration tests. Debian 12, run as root, no systemd
# needed: every daemon is started directly and stopped through its pid file.
#
# Usage: scripts/slurm-cluster.sh <command>
#   install     apt-get install the packages (skipped when already installed)
#   start       install if needed, write configs, start munged, MariaDB,
#               slurmdbd, slurmctld, slurmd; wait until the node is idle.
#               Does nothing when the cluster is already up and healthy.
#   stop        stop every daemon (slurmd, slurmctld, slurmdbd, MariaDB, munged)
#   stop-ctld   stop only slurmctld (tests of an unreachable scheduler)
#   start-ctld  start slurmctld again (state and jobs are recovered)
#   stop-dbd    stop only slurmdbd
#   start-dbd   start slurmdbd again
#   status      exit 0 iff slurmctld answers and the node is idle/mixed/allocated
#
# Cluster: ClusterName=yonder, partitions `debug` (default, MaxTime=INFINITE)
# and `short` (MaxTime=1 minute), MinJobAge=30, MessageTimeout=5.
# Accounts: root (default), and account `yonder` with the non-root user
# `yonder-test` (home /home/yonder-test), for `runuser -u yonder-test -- sbatch`.
# A job's working directory must be writable by its user (use --chdir/-o).
#
# Environment: YONDER_SLURM_QUIET=1 prints only warnings and errors.
set -euo pipefail

readonly CLUSTER=yonder
readonly TEST_USER=yonder-test
readonly TEST_UID=2000
readonly TEST_ACCOUNT=yonder
readonly DB_NAME=slurm_acct_db
readonly DB_USER=slurm
readonly DB_PASS=yonder-slurm-test
readonly PACKAGES=(slurm-wlm slurm-client slurmctld slurmd slurmdbd munge mariadb-server)

readonly CONF_DIR=/etc/slurm
readonly LOG_DIR=/var/log/slurm
readonly RUN_DIR=/run/slurm
readonly STATE_DIR=/var/lib/slurm/slurmctld
readonly SPOOL_DIR=/var/lib/slurm/slurmd
readonly CTLD_PID=$RUN_DIR/slurmctld.pid
readonly SLURMD_PID=$RUN_DIR/slurmd.pid
readonly DBD_PID=$RUN_DIR/slurmdbd.pid
readonly MUNGE_PID=/run/munge/munged.pid
readonly MYSQL_PID=/run/mysqld/mysqld.pid
readonly MYSQL_LOG=/var/log/mysql/yonder-mysqld.log

# Sanitised environment for the Slurm client commands run by this script.
unset SQUEUE_FORMAT SQUEUE_FORMAT2 SQUEUE_STATES SQUEUE_USERS SINFO_FORMAT \
  SACCT_FORMAT SLURM_CLUSTERS SLURM_CONF SLURM_TIME_FORMAT SLURM_EXIT_ERROR 2>/dev/null || true
export DEBIAN_FRONTEND=noninteractive

LOG_NAME=slurm-cluster
LOG_QUIET=${YONDER_SLURM_QUIET:-0}
# shellcheck source=lib/log.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"

dump_logs() {
  local f
  for f in /var/log/munge/munged.log "$MYSQL_LOG" "${MYSQL_LOG%.log}.stdout" "$LOG_DIR/slurmdbd.log" \
    "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log"; do
    if [[ -s $f ]]; then
      printf '\n----- last lines of %s -----\n' "$f" >&2
      tail -n 25 "$f" >&2 || true
    fi
  done
}

need_root() {
  [[ $(id -u) == 0 ]] || { echo "slurm-cluster.sh must run as root" >&2; exit 1; }
}

# ---------------------------------------------------------------- processes

# proc_alive PID: the process exists and is not a zombie (PID 1 here may be
# slow to reap the daemons it inherits).
proc_alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
  [[ -n $state && $state != Z && $state != X ]]
}

# pid_alive PIDFILE [COMM]: the pid file names a live process (whose command
# name is COMM, if given, so a stale pid reused by something else is ignored).
pid_alive() {
  local file=$1 comm=${2:-} pid
  [[ -s $file ]] || return 1
  pid=$(tr -dc '0-9' <"$file")
  [[ -n $pid ]] && proc_alive "$pid" || return 1
  if [[ -n $comm ]]; then
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]] || return 1
  fi
}

# stop_pidfile NAME PIDFILE COMM: SIGTERM, wait up to 20 s, then SIGKILL.
stop_pidfile() {
  local name=$1 file=$2 comm=$3 pid i
  if ! pid_alive "$file" "$comm"; then
    rm -f "$file"
    log "$name is not running"
    return 0
  fi
  pid=$(tr -dc '0-9' <"$file")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do
    proc_alive "$pid" || break
    sleep 0.1
  done
  if proc_alive "$pid"; then
    warn "$name (pid $pid) ignored SIGTERM for 20 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      proc_alive "$pid" || break
      sleep 0.1
    done
  fi
  rm -f "$file"
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s.
wait_for() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$(($(date +%s) + timeout))
  until "$@" >/dev/null 2>&1; do
    if (($(date +%s) >= deadline)); then
      die "timed out after ${timeout}s waiting for $what"
    fi
    sleep 0.2
  done
}

# ------------------------------------------------------------------ install

packages_installed() {
  local p
  for p in "${PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || return 1
  done
  command -v slurmctld >/dev/null && command -v mysqld_safe >/dev/null
}

# From dpkg: `sbatch --version` fails until /etc/slurm/slurm.conf exists.
slurm_version() { dpkg-query -W -f='${Version}' slurm-client 2>/dev/null || echo '?'; }

# apt_get ARGS...: apt-get with its output on stderr (in a log when quiet).
apt_get() {
  if [[ ${YONDER_SLURM_QUIET:-0} == 1 ]]; then
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
    log "packages already installed (slurm $(slurm_version))"
    return 0
  fi
  local t=$SECONDS added_policy=0
  # Keep the packages' maintainer scripts from starting services (we start
  # them ourselves, with our configs). Docker-style images already have this.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  # apt-get update when the lists do not know the packages (stale lists are
  # handled by the retry below).
  if [[ $(apt-cache policy slurmctld mariadb-server 2>/dev/null | grep -c 'Candidate: [0-9]') != 2 ]]; then
    log "apt-get update"
    apt_get update -qq
  fi
  log "apt-get install ${PACKAGES[*]}"
  local rc=0
  apt_get install -y -qq --no-install-recommends "${PACKAGES[@]}" || rc=$?
  if ((rc != 0)); then
    log "apt-get install failed (rc $rc); retrying after apt-get update"
    apt_get update -qq
    rc=0
    apt_get install -y -qq --no-install-recommends "${PACKAGES[@]}" || rc=$?
  fi
  ((added_policy)) && rm -f /usr/sbin/policy-rc.d
  ((rc == 0)) || die "apt-get install failed (rc $rc)"
  log "installed slurm $(slurm_version) in $((SECONDS - t))s"
}

# ------------------------------------------------------------------ configs

# write_if_changed FILE OWNER MODE: stdin → FILE; returns 0 if FILE changed.
write_if_changed() {
  local file=$1 owner=$2 mode=$3 tmp
  tmp=$(mktemp "$file.XXXXXX")
  cat >"$tmp"
  chown "$owner" "$tmp"
  chmod "$mode" "$tmp"
  if [[ -f $file ]] && cmp -s "$tmp" "$file"; then
    rm -f "$tmp"
    chown "$owner" "$file"
    chmod "$mode" "$file"
    return 1
  fi
  mv -f "$tmp" "$file"
  return 0
}

SLURM_CONF_CHANGED=0
DBD_CONF_CHANGED=0

prepare_system() {
  # Users (the packages create slurm, munge and mysql).
  id slurm >/dev/null 2>&1 || die "user slurm missing: are the packages installed?"
  if ! id "$TEST_USER" >/dev/null 2>&1; then
    log "creating user $TEST_USER"
    if ! getent group "$TEST_USER" >/dev/null; then
      if getent group "$TEST_UID" >/dev/null; then
        groupadd "$TEST_USER"
      else
        groupadd --gid "$TEST_UID" "$TEST_USER"
      fi
    fi
    local uid_opt=()
    getent passwd "$TEST_UID" >/dev/null || uid_opt=(--uid "$TEST_UID")
    useradd --create-home --shell /bin/bash --gid "$TEST_USER" "${uid_opt[@]}" "$TEST_USER"
  fi
  local home
  home=$(getent passwd "$TEST_USER" | cut -d: -f6)
  [[ -d $home ]] || { mkdir -p "$home" && chown "$TEST_USER:" "$home"; }

  # Directories.
  install -d -o slurm -g slurm -m 0755 "$LOG_DIR" "$RUN_DIR" /var/lib/slurm "$STATE_DIR"
  install -d -o root -g root -m 0755 "$SPOOL_DIR" "$CONF_DIR"
  install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge
  install -d -o munge -g munge -m 0700 /var/log/munge
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o mysql -g mysql -m 0755 /run/mysqld /var/log/mysql

  # munge key: 1024 random bytes, owned by munge, 0400.
  if [[ ! -s /etc/munge/munge.key ]]; then
    log "creating /etc/munge/munge.key"
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
}

write_configs() {
  local host cpus mem_mb real_mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
  # A little under the machine's (slurmd drains the node if RealMemory is
  # above what it finds): 95 %, and at least 256 MB below.
  real_mem=$((mem_mb * 95 / 100))
  ((mem_mb - real_mem >= 256)) || real_mem=$((mem_mb - 256))
  ((real_mem > 0)) || real_mem=$mem_mb

  if write_if_changed "$CONF_DIR/slurm.conf" root:root 0644 <<EOF; then SLURM_CONF_CHANGED=1; fi
# Written by yonder scripts/slurm-cluster.sh: one-node test cluster.
ClusterName=$CLUSTER
SlurmctldHost=$host
SlurmUser=slurm
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE_DIR
SlurmdSpoolDir=$SPOOL_DIR
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups in this container.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
# Cores and memory are consumable, so --mem is honoured; jobs that give no
# --mem get DefMemPerCPU (otherwise a job would take the whole node's memory).
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
# Accounting through slurmdbd; keep --comment in the accounting DB.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Short timings for tests: finished jobs leave squeue after 30 s; time limits
# are enforced without grace; commands give up quickly on a dead controller.
MinJobAge=30
OverTimeLimit=0
KillWait=2
InactiveLimit=0
MessageTimeout=5
SlurmctldTimeout=30
SlurmdTimeout=30
ReturnToService=2
SchedulerType=sched/backfill
NodeName=$host CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=$host Default=NO MaxTime=1 State=UP
EOF

  if write_if_changed "$CONF_DIR/slurmdbd.conf" slurm:slurm 0600 <<EOF; then DBD_CONF_CHANGED=1; fi
# Written by yonder scripts/slurm-cluster.sh
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
DebugLevel=info
LogFile=$LOG_DIR/slurmdbd.log
PidFile=$DBD_PID
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
  # Neither cgroup.conf nor gres.conf is needed with the plugins above.
  return 0
}

# ------------------------------------------------------------------ daemons

start_munge() {
  if pid_alive "$MUNGE_PID" munged && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "munged already running"
    return 0
  fi
  log "starting munged"
  rm -f "$MUNGE_PID" /run/munge/munge.socket.2*
  runuser -u munge -- /usr/sbin/munged --force </dev/null >>/var/log/munge/munged.stdout 2>&1 ||
    die "munged failed to start"
  wait_for 10 "munged" sh -c 'munge -n | unmunge'
}

mysql_up() { mysqladmin --protocol=socket -u root ping >/dev/null 2>&1; }

start_mysql() {
  if mysql_up; then
    log "MariaDB already running"
  else
    if [[ ! -d /var/lib/mysql/mysql ]]; then
      log "initialising the MariaDB data directory"
      mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null 2>&1 ||
        die "mariadb-install-db failed"
    fi
    log "starting MariaDB"
    # The error log is written by mariadbd as mysql; mysqld_safe's own
    # output goes to a second file.
    touch "$MYSQL_LOG" && chown mysql:mysql "$MYSQL_LOG"
    setsid mysqld_safe --user=mysql --pid-file="$MYSQL_PID" --log-error="$MYSQL_LOG" \
      --skip-syslog </dev/null >>"${MYSQL_LOG%.log}.stdout" 2>&1 &
    disown || true
    wait_for 60 "MariaDB (mysqladmin ping)" mysql_up
  fi
  mysql --protocol=socket -u root <<EOF || die "could not create the slurm DB user"
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO '$DB_USER'@'localhost';
FLUSH PRIVILEGES;
EOF
}

stop_mysql() {
  if ! mysql_up && ! pid_alive "$MYSQL_PID" mariadbd && ! pid_alive "$MYSQL_PID" mysqld; then
    log "MariaDB is not running"
    return 0
  fi
  local pid=''
  [[ -s $MYSQL_PID ]] && pid=$(tr -dc '0-9' <"$MYSQL_PID")
  log "stopping MariaDB${pid:+ (pid $pid)}"
  if ! mysqladmin --protocol=socket -u root shutdown >/dev/null 2>&1 && [[ -n $pid ]]; then
    kill -TERM "$pid" 2>/dev/null || true
  fi
  local i
  for ((i = 0; i < 300; i++)); do
    if [[ -n $pid ]]; then proc_alive "$pid" || break; else mysql_up || break; fi
    sleep 0.1
  done
  [[ -n $pid ]] && proc_alive "$pid" && warn "MariaDB (pid $pid) still running after 30 s"
  return 0
}

dbd_up() { timeout 15 sacctmgr -n -P list cluster format=cluster >/dev/null 2>&1; }

start_dbd() {
  if pid_alive "$DBD_PID" slurmdbd && dbd_up; then
    log "slurmdbd already running"
    return 0
  fi
  if pid_alive "$DBD_PID" slurmdbd; then
    # Running but not answering: give it a moment, then restart it.
    sleep 2
    dbd_up && return 0
    stop_pidfile slurmdbd "$DBD_PID" slurmdbd
  fi
  log "starting slurmdbd"
  slurmdbd </dev/null >>"$LOG_DIR/slurmdbd.stdout" 2>&1 || die "slurmdbd failed to start"
  wait_for 30 "slurmdbd (sacctmgr list cluster)" dbd_up
}

ctld_up() { timeout 15 scontrol ping 2>/dev/null | grep -q 'is UP'; }

start_ctld() {
  if pid_alive "$CTLD_PID" slurmctld && ctld_up; then
    log "slurmctld already running"
    return 0
  fi
  pid_alive "$CTLD_PID" slurmctld && stop_pidfile slurmctld "$CTLD_PID" slurmctld
  log "starting slurmctld"
  # Default start recovers jobs and node state from $STATE_DIR.
  slurmctld </dev/null >>"$LOG_DIR/slurmctld.stdout" 2>&1 || die "slurmctld failed to start"
  wait_for 30 "slurmctld (scontrol ping)" ctld_up
}

start_slurmd() {
  if pid_alive "$SLURMD_PID" slurmd; then
    log "slurmd already running"
    return 0
  fi
  log "starting slurmd"
  SLURMD_STARTED_AT=$(date +%s)
  slurmd </dev/null >>"$LOG_DIR/slurmd.stdout" 2>&1 || die "slurmd failed to start"
  # slurmctld may show the node idle from its saved state: wait until this
  # slurmd has registered.
  wait_for 30 "slurmd to register with slurmctld" slurmd_registered
}

SLURMD_STARTED_AT=0
slurmd_registered() {
  local line started
  line=$(scontrol show node "$(hostname -s)" 2>/dev/null) || return 1
  [[ $line =~ SlurmdStartTime=([0-9T:-]+) ]] || return 1
  started=$(date -d "${BASH_REMATCH[1]}" +%s 2>/dev/null) || return 1
  ((started >= SLURMD_STARTED_AT))
}

node_state() { timeout 15 sinfo -h -N -o %T 2>/dev/null | head -n 1; }

node_ok() {
  case $(node_state) in
    idle | mixed | allocated | completing) return 0 ;;
    *) return 1 ;;
  esac
}

wait_node_idle() {
  local start=$(date +%s) state resumed=0 restarted=0
  local deadline=$((start + 60))
  while :; do
    state=$(node_state || true)
    case $state in
      idle | mixed | allocated | completing) log "node is $state"; return 0 ;;
      down* | drain* | fail*)
        if ((!resumed)); then
          log "node is $state; resuming it"
          scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 || true
          resumed=1
        fi
        ;;
      unknown* | '')
        # A slurmd that never registered with a restarted slurmctld (ci17: the node stayed
        # unknown for 40 s after start-ctld): start it again, once, so that it registers.
        if ((!restarted && $(date +%s) >= start + 10)); then
          log "node is ${state:-not listed} after 10 s; restarting slurmd"
          stop_pidfile slurmd "$SLURMD_PID" slurmd
          start_slurmd
          restarted=1
        fi
        ;;
    esac
    (($(date +%s) < deadline)) || die "node did not become idle (state: ${state:-none})"
    sleep 0.3
  done
}

# Cluster, account and users in the accounting DB (idempotent).
setup_accounting() {
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    log "adding cluster $CLUSTER to the accounting DB"
    sacctmgr -i add cluster "$CLUSTER" >&2 || die "sacctmgr add cluster failed"
  fi
  if ! sacctmgr -n -P list account "$TEST_ACCOUNT" format=account | grep -qx "$TEST_ACCOUNT"; then
    log "adding account $TEST_ACCOUNT"
    sacctmgr -i add account "$TEST_ACCOUNT" Cluster="$CLUSTER" \
      Description="yonder tests" Organization=yonder >&2 || die "sacctmgr add account failed"
  fi
  if ! sacctmgr -n -P list assoc cluster="$CLUSTER" user="$TEST_USER" format=user | grep -qx "$TEST_USER"; then
    log "adding user $TEST_USER to account $TEST_ACCOUNT"
    sacctmgr -i add user "$TEST_USER" Account="$TEST_ACCOUNT" Cluster="$CLUSTER" >&2 ||
      die "sacctmgr add user failed"
  fi
}

healthy() {
  pid_alive "$MUNGE_PID" munged && pid_alive "$DBD_PID" slurmdbd &&
    pid_alive "$CTLD_PID" slurmctld && pid_alive "$SLURMD_PID" slurmd &&
    mysql_up && ctld_up && node_ok
}

cmd_start() {
  need_root
  cmd_install
  local t=$SECONDS
  prepare_system
  write_configs
  if ((SLURM_CONF_CHANGED == 0 && DBD_CONF_CHANGED == 0)) && healthy; then
    log "cluster already running and healthy; nothing to do"
    return 0
  fi
  if ((DBD_CONF_CHANGED)) && pid_alive "$DBD_PID" slurmdbd; then
    log "slurmdbd.conf changed: restarting slurmdbd"
    stop_pidfile slurmdbd "$DBD_PID" slurmdbd
  fi
  if ((SLURM_CONF_CHANGED)); then
    if pid_alive "$CTLD_PID" slurmctld || pid_alive "$SLURMD_PID" slurmd; then
      log "slurm.conf changed: restarting slurmctld and slurmd"
      # slurmctld first, so that it launches nothing on a stopped slurmd.
      stop_pidfile slurmctld "$CTLD_PID" slurmctld
      stop_pidfile slurmd "$SLURMD_PID" slurmd
    fi
  fi
  start_munge
  start_mysql
  start_dbd
  setup_accounting
  start_ctld
  start_slurmd
  wait_node_idle
  log "cluster $CLUSTER is up (${SECONDS}s total, $((SECONDS - t))s for the daemons)"
}

cmd_stop() {
  need_root
  stop_pidfile slurmctld "$CTLD_PID" slurmctld
  stop_pidfile slurmd "$SLURMD_PID" slurmd
  stop_pidfile slurmdbd "$DBD_PID" slurmdbd
  stop_mysql
  stop_pidfile munged "$MUNGE_PID" munged
  log "stopped"
}

cmd_stop_ctld() {
  need_root
  stop_pidfile slurmctld "$CTLD_PID" slurmctld
}

cmd_start_ctld() {
  need_root
  pid_alive "$MUNGE_PID" munged || die "munged is not running: use start"
  start_ctld
  start_slurmd
  wait_node_idle
}

cmd_stop_dbd() {
  need_root
  stop_pidfile slurmdbd "$DBD_PID" slurmdbd
}

cmd_start_dbd() {
  need_root
  pid_alive "$MUNGE_PID" munged || die "munged is not running: use start"
  start_mysql
  start_dbd
}

cmd_status() {
  local rc=0 state ping
  for d in munged:$MUNGE_PID slurmdbd:$DBD_PID slurmctld:$CTLD_PID slurmd:$SLURMD_PID; do
    if pid_alive "${d#*:}" "${d%%:*}"; then
      echo "${d%%:*}: running (pid $(tr -dc '0-9' <"${d#*:}"))"
    else
      echo "${d%%:*}: not running"
    fi
  done
  if mysql_up; then echo "mariadb: running"; else echo "mariadb: not answering"; fi
  if command -v scontrol >/dev/null; then
    ping=$(timeout 15 scontrol ping 2>&1 || true)
    echo "scontrol ping: ${ping//$'\n'/ }"
    if [[ $ping == *"is UP"* ]]; then
      state=$(node_state || true)
      echo "node $(hostname -s): ${state:-unknown}"
      case $state in
        idle | mixed | allocated) ;;
        *) rc=1 ;;
      esac
    else
      rc=1
    fi
  else
    echo "slurm is not installed"
    rc=1
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
    stop-ctld) cmd_stop_ctld ;;
    start-ctld) cmd_start_ctld ;;
    stop-dbd) cmd_stop_dbd ;;
    start-dbd) cmd_start_dbd ;;
    status) cmd_status ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
  esac
}

main "$@"
