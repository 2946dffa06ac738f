#!/usr/bin/env bash
# A private PostgreSQL test cluster for @yonder/store-postgres, for CI (scripts/test-all.sh)
# and the integration tests. Debian's postgresql (15 on Debian 12), no systemd: initdb in a
# directory of its own, started with pg_ctl, reached through a Unix socket only (no TCP port),
# run as an unprivileged user (`postgres` when this script runs as root, else the caller).
#
# Usage: scripts/postgres-cluster.sh <command>
#   start    install postgresql if initdb is missing (as root), initdb once, start the
#            server; does nothing when it is already up. About two seconds the first time.
#   stop     stop the server (fast shutdown); the data directory is kept
#   status   exit 0 iff the server answers on its socket
#   env      print `export YONDER_PG_HOST=…` lines: the socket directory, the superuser role
#   destroy  stop and remove the directory
#
# Layout: $YONDER_PG_DIR (default /tmp/yonder-postgres), mode 0755, holds the socket
# (.s.PGSQL.5432), `data/` (0700) and `server.log`.
# Roles and authentication (pg_hba.conf, no password travels for the usual case):
#   - the superuser role is `yonder`; the Unix users root, postgres and the one who started
#     the cluster reach it by peer authentication (`psql -h $YONDER_PG_HOST -U yonder`);
#   - every other Unix user reaches the role of its own name by peer authentication (the
#     permission tests run psql as the test users yonder-victim and yonder-attacker);
#   - members of the role `yonder_password` authenticate with a password (scram-sha-256),
#     which the tests of a wrong password use.
#
# Environment: YONDER_PG_DIR (where), YONDER_PG_QUIET=1 (warnings and errors only).
set -euo pipefail

readonly DIR=${YONDER_PG_DIR:-/tmp/yonder-postgres}
readonly DATA=$DIR/data
readonly LOGFILE=$DIR/server.log
readonly SUPERUSER=yonder

LOG_NAME=postgres-cluster
LOG_QUIET=${YONDER_PG_QUIET:-0}
# shellcheck source=lib/log.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"

dump_logs() {
  if [[ -s $LOGFILE ]]; then
    printf '\n----- last lines of %s -----\n' "$LOGFILE" >&2
    tail -n 25 "$LOGFILE" >&2 || true
  fi
}

pg_bin() {
  local bin
  for bin in /usr/lib/postgresql/*/bin; do
    [[ -x $bin/initdb ]] && { printf '%s\n' "$bin"; return 0; }
  done
  return 1
}

# The Unix user the server runs as: postgres under root (initdb refuses root), else the caller.
owner() {
  if [[ $(id -u) == 0 ]]; then echo postgres; else id -un; fi
}

as_owner() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_postgres() {
  pg_bin >/dev/null && return 0
  [[ $(id -u) == 0 ]] || die "PostgreSQL is not installed; as root run: apt-get install -y postgresql"
  log "installing postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends postgresql >&2 ||
    { apt-get update >&2 && apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends postgresql >&2; }
  pg_bin >/dev/null || die "initdb not found after installing postgresql"
}

is_up() {
  local bin
  bin=$(pg_bin) || return 1
  [[ -S $DIR/.s.PGSQL.5432 ]] || return 1
  "$bin/pg_isready" -q -h "$DIR" -t 5 >/dev/null 2>&1
}

psql_super() {
  "$(pg_bin)/psql" -X -q -v ON_ERROR_STOP=1 -h "$DIR" -U "$SUPERUSER" -d postgres "$@"
}

init_cluster() {
  local bin who
  bin=$(pg_bin)
  who=$(owner)
  # The directory: the owner's, not writable by others, readable so every user reaches the socket.
  if [[ -e $DIR && ! -d $DIR ]] || [[ -L $DIR ]]; then die "$DIR exists and is not a directory"; fi
  mkdir -p "$DIR"
  [[ $(id -u) == 0 ]] && chown "$who": "$DIR"
  chmod 0755 "$DIR"
  [[ $(stat -c %U "$DIR") == "$who" ]] || die "$DIR belongs to $(stat -c %U "$DIR"), not $who; remove it or set YONDER_PG_DIR"
  [[ -f $DATA/PG_VERSION ]] && return 0
  log "initdb in $DATA"
  rm -rf "$DATA"
  as_owner "$bin/initdb" -D "$DATA" -U "$SUPERUSER" --auth-local=peer --auth-host=reject \
    --no-sync -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
  as_owner sh -c 'cat >"$1/pg_hba.conf"' sh "$DATA" <<'HBA'
# yonder's private test cluster: Unix socket only.
local all +yonder_password scram-sha-256
local all all peer map=yonder
HBA
  as_owner sh -c 'cat >"$1/pg_ident.conf"' sh "$DATA" <<IDENT
# MAPNAME SYSTEM-USERNAME PG-USERNAME
yonder root $SUPERUSER
yonder postgres $SUPERUSER
yonder $who $SUPERUSER
yonder /^(.*)\$ \\1
IDENT
}

start() {
  if is_up; then
    log "already running (socket in $DIR)"
    return 0
  fi
  install_postgres
  init_cluster
  local bin
  bin=$(pg_bin)
  # A server that died left its pid file: pg_ctl starts anyway when the pid is not alive.
  log "starting the server"
  as_owner "$bin/pg_ctl" -D "$DATA" -l "$LOGFILE" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$DIR' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c password_encryption=scram-sha-256" \
    start >/dev/null || die "the server did not start"
  is_up || die "the server started but does not answer on $DIR"
  psql_super -c "DO \$\$ BEGIN CREATE ROLE yonder_password NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$" ||
    die "could not create the role yonder_password"
  log "up: psql -h $DIR -U $SUPERUSER -d postgres"
}

stop() {
  local bin
  bin=$(pg_bin) || { log "PostgreSQL is not installed"; return 0; }
  if [[ ! -f $DATA/postmaster.pid ]]; then
    log "not running"
    return 0
  fi
  as_owner "$bin/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  if [[ -f $DATA/postmaster.pid ]] && is_up; then die "the server did not stop"; fi
  log "stopped"
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) is_up ;;
env)
  printf "export YONDER_PG_HOST='%s'\nexport YONDER_PG_SUPERUSER='%s'\n" "$DIR" "$SUPERUSER"
  ;;
destroy)
  stop
  rm -rf "$DIR"
  ;;
*)
  echo "usage: $0 start|stop|status|env|destroy" >&2
  exit 2
  ;;
esac
