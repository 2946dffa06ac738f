#!/usr/bin/env bash
# Make podman usable for the container tests on this kind of machine, and give root and the
# unprivileged test victim the test image (idempotent; run as root, after scripts/test-users.sh).
#
#   bash scripts/containers.sh          install podman and runc, write the VM's podman settings,
#                                       check subuid/subgid, import the image for both users
#   bash scripts/containers.sh status   exit 0 only when both users have the image
#
# No registry is reachable here, so the image is built from Debian's busybox-static: a root
# file system of busybox and its applets, a marker file /etc/yonder-image, imported with
# `podman import` as localhost/yonder-test-busybox. The VM needs three settings a real
# workstation or cluster node does not (shared/reference/containers-here.md): runc instead of
# crun (crun refuses cgroups in hybrid mode), explicit ulimits below the VM's hard limits, and
# the host's network namespace (rootless networking needs /dev/net/tun, which is root's only
# here). They go in a drop-in of /etc/containers/containers.conf.d, so the package's own
# containers.conf is untouched.
set -euo pipefail

IMAGE=${YONDER_TEST_IMAGE:-localhost/yonder-test-busybox}
VICTIM=${YONDER_TEST_VICTIM:-yonder-victim}
DROPIN=/etc/containers/containers.conf.d/50-yonder-test.conf
MARKER=hello-from-image

log() { [[ -n ${YONDER_CONTAINERS_QUIET:-} ]] || echo "containers: $*" >&2; }
die() {
  echo "containers: $*" >&2
  exit 1
}

as_victim() { (cd / && runuser -u "$VICTIM" -- env -i HOME="$(getent passwd "$VICTIM" | cut -d: -f6)" PATH=/usr/local/bin:/usr/bin:/bin "$@"); }

has_image() {
  if [[ $1 == root ]]; then podman image exists "$IMAGE"; else as_victim podman image exists "$IMAGE"; fi
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

# Rootless podman maps the user's namespace through /etc/subuid and /etc/subgid.
check_subids() {
  local file
  for file in /etc/subuid /etc/subgid; do
    if ! grep -q "^$VICTIM:" "$file" 2>/dev/null; then
      log "giving $VICTIM subordinate ids in $file"
      usermod --add-subuids 165536-231071 --add-subgids 165536-231071 "$VICTIM"
      return 0
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
  if ! has_image root; then
    log "importing $IMAGE for root"
    tar -C "$root" --owner=0 --group=0 -c . | podman import -q - "$IMAGE" >/dev/null
  fi
  if ! has_image "$VICTIM"; then
    log "importing $IMAGE for $VICTIM (rootless)"
    tar -C "$root" --owner=0 --group=0 -c . | as_victim podman import -q - "$IMAGE" >/dev/null
  fi
}

case ${1:-setup} in
  setup)
    [[ $(id -u) == 0 ]] || die "run as root (it installs packages and writes $DROPIN)"
    id "$VICTIM" >/dev/null 2>&1 || die "$VICTIM is missing: run scripts/test-users.sh first"
    install_packages
    write_settings
    check_subids
    build_image
    has_image root && has_image "$VICTIM" || die "the image $IMAGE could not be imported"
    log "ready: $IMAGE for root and $VICTIM"
    ;;
  status)
    command -v podman >/dev/null 2>&1 && has_image root && has_image "$VICTIM"
    ;;
  *) die "unknown command '$1' (use setup or status)" ;;
esac
