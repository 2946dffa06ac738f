#!/usr/bin/env bash
# Create the two unprivileged accounts the shared-machine tests run yonder as: a victim and an
# attacker, each with a private home and a group of their own, and a group project both are in
# (idempotent; run as root, e.g. by scripts/test-all.sh).
#
#   bash scripts/test-users.sh          create them (or check them) and print their names
#   bash scripts/test-users.sh status   exit 0 only when both exist with usable homes, in the group
#
# Root bypasses every permission check, so a test that is about permissions must run the CLI
# as one of these users (packages/test-helpers/src/test-users.ts and run-as.ts).
set -euo pipefail

VICTIM=${YONDER_TEST_VICTIM:-yonder-victim}
ATTACKER=${YONDER_TEST_ATTACKER:-yonder-attacker}
# A group project directory's group: the victim and the attacker are both members.
LAB=${YONDER_TEST_GROUP:-yonder-lab}

log() { [[ -n ${YONDER_USERS_QUIET:-} ]] || echo "test-users: $*" >&2; }
die() {
  echo "test-users: $*" >&2
  exit 1
}

home_of() { getent passwd "$1" | cut -d: -f6; }

usable() {
  local user=$1 home
  id "$user" >/dev/null 2>&1 || return 1
  home=$(home_of "$user")
  [[ -n $home && $home != / && -d $home && ! -L $home ]] || return 1
  [[ $(stat -c %U "$home") == "$user" ]] || return 1
  return 0
}

in_lab() { id -nG "$1" 2>/dev/null | tr ' ' '\n' | grep -qx -- "$LAB"; }

ensure_lab() {
  getent group "$LAB" >/dev/null || groupadd "$LAB"
  local user
  for user in "$VICTIM" "$ATTACKER"; do
    in_lab "$user" || usermod -a -G "$LAB" "$user"
  done
}

ensure() {
  local user=$1 home
  if ! id "$user" >/dev/null 2>&1; then
    log "creating user $user"
    getent group "$user" >/dev/null || groupadd "$user"
    useradd --create-home --home-dir "/home/$user" --shell /bin/bash --gid "$user" "$user"
  fi
  home=$(home_of "$user")
  [[ -n $home && $home != / ]] || die "$user has no usable home directory"
  [[ ! -L $home ]] || die "the home of $user ($home) is a symlink"
  [[ -d $home ]] || install -d -o "$user" -g "$(id -gn "$user")" -m 0700 "$home"
  # A private home: nobody else can plant anything in it, as on a well-kept shared machine.
  chown "$user:$(id -gn "$user")" "$home"
  chmod 0700 "$home"
}

case ${1:-create} in
  create)
    [[ $(id -u) == 0 ]] || die "run as root (it creates users)"
    ensure "$VICTIM"
    ensure "$ATTACKER"
    ensure_lab
    log "ready: $VICTIM ($(home_of "$VICTIM")), $ATTACKER ($(home_of "$ATTACKER"))"
    ;;
  status)
    usable "$VICTIM" && usable "$ATTACKER" && in_lab "$VICTIM" && in_lab "$ATTACKER"
    ;;
  *) die "unknown command '$1' (use create or status)" ;;
esac
