#!/usr/bin/env bash
# Make podman usable for the container tests on this kind of machine, and give root, the
# unprivileged test victim and the sshd test hosts' user the test image (idempotent; run as
# root, after scripts/test-users.sh and scripts/sshd-hosts.sh).
#
#   bash scripts/containers.sh          install podman and runc, write the VM's podman settings,
#                                       check subuid/subgid, import the image for both users
#   bash scripts/containers.sh status   exit 0 only when every one of them has the image
#
# No registry is reachable here, so the image is built from Debian's busybox-static: a root
# file system of busybox and its applets, a marker file /etc/yonder-image, imported with
# `podman import` as localhost/yonder-test-busybox. The VM needs three settings a real
# workstation or cluster node does not (shared/reference/containers-here.md): runc instead of
# crun (crun refuses cgroups in hybrid mode), explicit ulimits below the VM's hard limits, and
# the host's network namespace (rootless networking needs /dev/net/tun, which is root's only
# here). A fourth, / as a shared mount, is set with mount(8). The settings go in a drop-in of /etc/containers/containers.conf.d, so the package's own
# containers.conf is untouched.
set -euo pipefail

IMAGE=${YONDER_TEST_IMAGE:-localhost/yonder-test-busybox}
VICTIM=${YONDER_TEST_VICTIM:-yonder-victim}
# The user the sshd test hosts log in as (scripts/sshd-hosts.sh), when it exists: the ssh tests
# run podman as that user.
SSH_USER=${YONDER_SSH_USER:-yonder-test}
DROPIN=/etc/containers/containers.conf.d/50-yonder-test.conf
MARKER=hello-from-image

log() { [[ -n ${YONDER_CONTAINERS_QUIET:-} ]] || echo "containers: $*" >&2; }
die() {
  echo "containers: $*" >&2
  exit 1
}

as_user() {
  local user=$1
  shift
  if [[ $user == root ]]; then
    (cd / && "$@")
  else
    (cd / && runuser -u "$user" -- env -i HOME="$(getent passwd "$user" | cut -d: -f6)" PATH=/usr/local/bin:/usr/bin:/bin "$@")
  fi
}

has_image() { as_user "$1" podman image exists "$IMAGE"; }

# root, the victim, and the ssh hosts' user when there is one.
users() {
  echo root
  echo "$VICTIM"
  if id "$SSH_USER" >/dev/null 2>&1; then echo "$SSH_USER"; fi
}

install_packages() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v catatonit >/dev/null 2>&1 || missing+=(catatonit)
  command -v newuidmap >/dev/null 2>&1 || missing+=(uidmap)
  dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing+=(busybox-static)
  ((${#missing[@]} == 0)) && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
}

write_settings() {
  mkdir -p "$(dirname "$DROPIN")"
  cat >"$DROPIN.tmp" <<'EOF'
# Written by yonder's scripts/containers.sh for its tests on this VM.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
netns = "host"

[engine]
runtime = "runc"
EOF
  mv -f "$DROPIN.tmp" "$DROPIN"
}

# Rootless podman maps the user's namespace through /etc/subuid and /etc/subgid: each user
# gets 65536 ids of its own, after the highest range given so far.
check_subids() {
  local user=$1 file next
  for file in /etc/subuid /etc/subgid; do
    touch "$file"
    grep -q "^$user:" "$file" && continue
    next=$(awk -F: 'BEGIN { n = 100000 } { if ($2 + $3 > n) n = $2 + $3 } END { print n }' "$file")
    log "giving $user subordinate ids $next-$((next + 65535)) in $file"
    if [[ $file == /etc/subuid ]]; then
      usermod --add-subuids "$next-$((next + 65535))" "$user"
    else
      usermod --add-subgids "$next-$((next + 65535))" "$user"
    fi
  done
}

build_image() {
  local root
  root=$(mktemp -d)
  trap 'rm -rf -- "$root"' RETURN
  chmod 0755 "$root"
  mkdir -p "$root/bin" "$root/etc" "$root/tmp"
  chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
  done
  echo "$MARKER" >"$root/etc/yonder-image"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  echo 'root:x:0:' >"$root/etc/group"
  local user
  for user in $(users); do
    has_image "$user" && continue
    log "importing $IMAGE for $user"
    tar -C "$root" --owner=0 --group=0 -c . | as_user "$user" podman import -q - "$IMAGE" >/dev/null
  done
}

all_have_image() {
  local user
  for user in $(users); do has_image "$user" || return 1; done
}

case ${1:-setup} in
  setup)
    [[ $(id -u) == 0 ]] || die "run as root (it installs packages and writes $DROPIN)"
    id "$VICTIM" >/dev/null 2>&1 || die "$VICTIM is missing: run scripts/test-users.sh first"
    install_packages
    write_settings
    # Rootless podman warns in every job's log when / is a private mount (systemd makes it shared
    # on a real machine; this VM's init does not).
    if [[ $(findmnt -no PROPAGATION / 2>/dev/null) == private ]]; then
      log "making / a shared mount, as systemd does"
      mount --make-rshared /
    fi
    for user in $(users); do [[ $user == root ]] || check_subids "$user"; done
    build_image
    all_have_image || die "the image $IMAGE could not be imported for every user"
    log "ready: $IMAGE for $(users | tr '\n' ' ')"
    ;;
  status)
    command -v podman >/dev/null 2>&1 && all_have_image
    ;;
  *) die "unknown command '$1' (use setup or status)" ;;
esac
