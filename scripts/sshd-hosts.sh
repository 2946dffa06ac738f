#!/usr/bin/env bash
# Real OpenSSH sshd test hosts on loopback, for the SSH integration tests.
# Debian 12, run as root, no systemd needed. Never reads or writes the
# user's ~/.ssh, /etc/ssh/sshd_config or /etc/ssh/ssh_config: every daemon
# has its own config, host keys, pid file and log under $YONDER_SSH_DIR, and
# the client side is used with `ssh -F $YONDER_SSH_CONFIG`.
#
# Usage: scripts/sshd-hosts.sh <command>
#   install         apt-get install openssh-server/-client (skipped when installed)
#   start           install if needed, create keys/configs/known_hosts/user,
#                   start the three daemons. Does nothing to a daemon that is
#                   already running, healthy and up to date.
#   stop            stop every daemon (listeners and their open connections)
#   status          exit 0 iff every daemon answers with its own host key
#   kill-connections  kill the per-connection sshd processes of every instance
#                   (drops open connections); the listeners stay up
#   stop-host NAME  stop one instance (listener and its connections)
#   start-host NAME start one instance
#   env             print `export` lines with the paths below (for eval)
#
# Hosts (all on 127.0.0.1, user yonder-test, public-key auth only, UsePAM yes,
# StrictModes yes, MaxStartups 100, LogLevel VERBOSE, no AcceptEnv):
#   target  port 2201  the workstation / login node (AllowTcpForwarding yes)
#   jump    port 2202  ProxyJump hop (AllowTcpForwarding yes)
#   narrow  port 2203  MaxSessions 2, AllowTcpForwarding no
# and the hosts of the ssh2 transport's tests (scripts/lib/sshd-ssh2-hosts.sh):
#   second  port 2231  publickey, then keyboard-interactive (a second factor)
#   passwd  port 2232  password only
#   rsa512  port 2233  RSA user keys only as rsa-sha2-512 (PubkeyAcceptedAlgorithms)
#   hostca  port 2234  a host certificate signed by the test host CA
#   userca  port 2235  user certificates only (TrustedUserCAKeys)
#   twofa   port 2204  publickey + a TOTP code   } scripts/lib/sshd-login-hosts.sh
#   shells  port 2205  users with bash, tcsh, fish } (the openssh transport's tests)
#                      and no setsid as login shell }
#
# Layout under ${YONDER_SSH_DIR:-/var/tmp/yonder-ssh} (0755):
#   hosts/NAME/{sshd_config,ssh_host_ed25519_key,ssh_host_rsa_key,*.pub,sshd.pid,sshd.log}
#   client/ (root, 0700): id_ed25519, id_encrypted (passphrase "correct horse"),
#     id_agent (for ssh-agent only; in no IdentityFile), *.pub, known_hosts,
#     known_hosts_hashed, known_hosts_empty, known_hosts_changed,
#     known_hosts_revoked, config (aliases target jump via-jump target-hashed
#     target-unknown target-changed target-revoked target-encrypted
#     target-agent narrow, and the ssh2 block's: inner via-chain jump-chained
#     via-list second passwd rsa512 hostca userca), id_rsa, id_cert (and
#     id_cert-cert.pub), known_hosts_alias, known_hosts_ca, known_hosts_ca_revoked
#   host-ca/, user-ca/ (root, 0700): ca, ca.pub (the host CA of hostca, the user CA of userca)
#   changed-keys/  the "other" host keys used by known_hosts_changed
# The client keys are in ~yonder-test/.ssh/authorized_keys (lines tagged
# "yonder-sshd-hosts:$YONDER_SSH_DIR:...").
#
# Environment: YONDER_SSH_DIR (made absolute; must not contain whitespace);
# YONDER_SSH_QUIET=1 prints only warnings and errors.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

readonly TEST_USER=yonder-test
readonly TEST_UID=2000
readonly ADDR=127.0.0.1
# The ssh2 transport's hosts (SSH2_HOSTS, SSH2_PORT and their ssh2_* functions).
# shellcheck source=lib/sshd-ssh2-hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/sshd-ssh2-hosts.sh"
readonly HOSTS=(target jump narrow "${SSH2_HOSTS[@]}")
declare -A PORT=([target]=2201 [jump]=2202 [narrow]=2203)
declare -A MAX_SESSIONS=([target]=10 [jump]=10 [narrow]=2)
declare -A TCP_FORWARDING=([target]=yes [jump]=yes [narrow]=no)
for h in "${SSH2_HOSTS[@]}"; do
  PORT[$h]=${SSH2_PORT[$h]}
  MAX_SESSIONS[$h]=10
  TCP_FORWARDING[$h]=no
done
unset h
readonly PORT MAX_SESSIONS TCP_FORWARDING
readonly PASSPHRASE='correct horse'
readonly PACKAGES=(openssh-server openssh-client)
readonly SSHD=/usr/sbin/sshd
readonly PRIVSEP_DIR=/run/sshd

BASE=${YONDER_SSH_DIR:-/var/tmp/yonder-ssh}
[[ $BASE == /* ]] || BASE=$PWD/$BASE
BASE=${BASE%/}
readonly BASE
readonly CLIENT=$BASE/client
readonly CHANGED_KEYS=$BASE/changed-keys
readonly HOST_CA=$BASE/host-ca
readonly AUTH_TAG="yonder-sshd-hosts:$BASE"

LOG_NAME=sshd-hosts
LOG_QUIET=${YONDER_SSH_QUIET:-0}
# shellcheck source=lib/log.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"
# Login-shell users, a user without setsid and the twofa host (the openssh transport's tests).
# shellcheck source=lib/sshd-login-hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/sshd-login-hosts.sh"

dump_logs() {
  local h f
  for h in "${HOSTS[@]}"; do
    f=$BASE/hosts/$h/sshd.log
    if [[ -s $f ]]; then
      printf '\n----- last lines of %s -----\n' "$f" >&2
      tail -n 15 "$f" >&2 || true
    fi
  done
}

need_root() {
  [[ $(id -u) == 0 ]] || { echo "sshd-hosts.sh must run as root" >&2; exit 1; }
}

check_base() {
  [[ $BASE != *[[:space:]]* ]] || die "YONDER_SSH_DIR must not contain whitespace: '$BASE'"
  [[ $BASE != / ]] || die "YONDER_SSH_DIR must not be /"
}

valid_host() {
  local h
  for h in "${HOSTS[@]}"; do [[ $1 == "$h" ]] && return 0; done
  echo "unknown host '$1' (one of: ${HOSTS[*]})" >&2
  exit 2
}

# Serialise the commands that change state (parallel test setups).
take_lock() {
  install -d -o root -g root -m 0755 "$BASE"
  exec 9>>"$BASE/.lock"
  flock -w 120 9 || die "could not lock $BASE/.lock within 120 s"
}

# ---------------------------------------------------------------- processes

# proc_alive PID: exists and is not a zombie.
proc_alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
  [[ -n $state && $state != Z && $state != X ]]
}

# proc_table: "pid ppid comm" for every process.
proc_table() {
  local f line pid comm rest
  for f in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$f" || continue
    pid=${f#/proc/}
    pid=${pid%/stat}
    comm=${line#*(}
    comm=${comm%)*}
    rest=${line##*) }
    rest=${rest#* }
    printf '%s %s %s\n' "$pid" "${rest%% *}" "${comm// /_}"
  done
}

# listener_pid NAME: pid of the instance's listening sshd, or nothing. From
# the pid file, else by the command line (a lost pid file).
listener_pid() {
  local name=$1 pidfile cfg pid f
  pidfile=$BASE/hosts/$name/sshd.pid
  cfg=$BASE/hosts/$name/sshd_config
  if [[ -s $pidfile ]]; then
    pid=$(tr -dc '0-9' <"$pidfile")
    if [[ -n $pid ]] && proc_alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == sshd ]] &&
      tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-f $cfg "; then
      echo "$pid"
      return 0
    fi
  fi
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == sshd ]] || continue
    if tr '\0' ' ' <"$f" 2>/dev/null | grep -qF -- "-f $cfg " && proc_alive "$pid"; then
      echo "$pid"
      return 0
    fi
  done
  return 0
}

# connection_pids NAME: the per-connection sshd processes of the instance:
# sshd descendants of the listener, plus orphans (listener gone) recognised
# by their open log file.
connection_pids() {
  local name=$1 lpid table log pid ppid comm fd changed
  local -A tree=()
  lpid=$(listener_pid "$name")
  table=$(proc_table)
  if [[ -n $lpid ]]; then
    tree[$lpid]=1
    changed=1
    while ((changed)); do
      changed=0
      while read -r pid ppid comm; do
        if [[ -n ${tree[$ppid]:-} && -z ${tree[$pid]:-} ]]; then
          tree[$pid]=1
          changed=1
        fi
      done <<<"$table"
    done
  fi
  log=$BASE/hosts/$name/sshd.log
  while read -r pid ppid comm; do
    [[ $comm == sshd && $pid != "$lpid" ]] || continue
    if [[ -n ${tree[$pid]:-} ]]; then
      echo "$pid"
      continue
    fi
    for fd in /proc/"$pid"/fd/*; do
      if [[ $(readlink "$fd" 2>/dev/null) == "$log" ]]; then
        echo "$pid"
        break
      fi
    done
  done <<<"$table"
}

# kill_pids PID...: SIGTERM, wait up to 3 s, then SIGKILL.
kill_pids() {
  (($#)) || return 0
  local pid i left
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < 30; i++)); do
    left=0
    for pid; do proc_alive "$pid" && left=1; done
    ((left)) || return 0
    sleep 0.1
  done
  for pid; do
    if proc_alive "$pid"; then
      warn "pid $pid ignored SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for ((i = 0; i < 20; i++)); do
    left=0
    for pid; do proc_alive "$pid" && left=1; done
    ((left)) || return 0
    sleep 0.1
  done
}

# ------------------------------------------------------------------- health

port_open() { (exec 3<>"/dev/tcp/$ADDR/$1") 2>/dev/null; }

# host_answers NAME: something on the port speaks SSH with this instance's
# ed25519 host key.
host_answers() {
  local name=$1 want got
  [[ -s $BASE/hosts/$name/ssh_host_ed25519_key.pub ]] || return 1
  want=$(awk '{print $2}' "$BASE/hosts/$name/ssh_host_ed25519_key.pub")
  got=$(timeout 10 ssh-keyscan -T 3 -t ed25519 -p "${PORT[$name]}" "$ADDR" 2>/dev/null </dev/null |
    awk '$2 == "ssh-ed25519" {print $3}') || true
  [[ -n $got && $got == "$want" ]]
}

host_healthy() {
  [[ -n $(listener_pid "$1") ]] && host_answers "$1"
}

# ------------------------------------------------------------------ install

packages_installed() {
  local p
  for p in "${PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || return 1
  done
  [[ -x $SSHD ]] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null &&
    command -v ssh-keyscan >/dev/null && command -v ssh-agent >/dev/null
}

apt_get() {
  if [[ ${YONDER_SSH_QUIET:-0} == 1 ]]; then
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
    log "packages already installed ($("$SSHD" -V 2>&1 </dev/null | head -n 1 || true))"
    install_login_packages
    return 0
  fi
  local t=$SECONDS added_policy=0 rc=0
  # The package's postinst would start a system sshd on port 22: forbid it.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  if [[ $(apt-cache policy "${PACKAGES[@]}" 2>/dev/null | grep -c 'Candidate: [0-9]') != "${#PACKAGES[@]}" ]]; then
    log "apt-get update"
    apt_get update -qq || rc=$?
  fi
  log "apt-get install ${PACKAGES[*]}"
  rc=0
  apt_get install -y -qq --no-install-recommends "${PACKAGES[@]}" || rc=$?
  if ((rc != 0)); then
    log "apt-get install failed (rc $rc); retrying after apt-get update"
    apt_get update -qq || true
    rc=0
    apt_get install -y -qq --no-install-recommends "${PACKAGES[@]}" || rc=$?
  fi
  ((added_policy)) && rm -f /usr/sbin/policy-rc.d
  ((rc == 0)) || die "apt-get install failed (rc $rc)"
  packages_installed || die "openssh is still not usable after apt-get install"
  log "installed $("$SSHD" -V 2>&1 </dev/null | head -n 1 || true) in $((SECONDS - t))s"
  install_login_packages
}

# ------------------------------------------------------------------ files

# write_if_changed FILE OWNER MODE: stdin -> FILE; returns 0 if FILE changed.
write_if_changed() {
  local file=$1 owner=$2 mode=$3 tmp
  tmp=$(mktemp "$file.XXXXXX")
  cat >"$tmp"
  chown "$owner" "$tmp"
  chmod "$mode" "$tmp"
  if [[ -f $file && ! -L $file ]] && cmp -s "$tmp" "$file"; then
    rm -f "$tmp"
    chown "$owner" "$file"
    chmod "$mode" "$file"
    return 1
  fi
  mv -f "$tmp" "$file"
  return 0
}

# gen_key FILE TYPE COMMENT [PASSPHRASE]: create the key pair unless both
# halves exist; returns 0 if a key was created.
gen_key() {
  local file=$1 type=$2 comment=$3 pass=${4:-} bits=()
  if [[ -s $file && -s $file.pub ]]; then
    chmod 0600 "$file"
    chmod 0644 "$file.pub"
    return 1
  fi
  [[ $type == rsa ]] && bits=(-b 3072)
  rm -f "$file" "$file.pub"
  ssh-keygen -q -t "$type" "${bits[@]}" -N "$pass" -C "$comment" -f "$file" </dev/null >/dev/null ||
    die "ssh-keygen -t $type -f $file failed"
  chmod 0600 "$file"
  chmod 0644 "$file.pub"
  log "created key $file"
  return 0
}

# pubkey FILE.pub: "type base64" (no comment).
pubkey() { awk 'NR == 1 {print $1, $2}' "$1"; }

ensure_user() {
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
    useradd --create-home --home-dir "/home/$TEST_USER" --shell /bin/bash --gid "$TEST_USER" \
      "${uid_opt[@]}" "$TEST_USER"
  fi
  local home group shell
  home=$(getent passwd "$TEST_USER" | cut -d: -f6)
  shell=$(getent passwd "$TEST_USER" | cut -d: -f7)
  group=$(id -gn "$TEST_USER")
  [[ -n $home && $home != / ]] || die "$TEST_USER has no usable home directory"
  case $shell in
    */nologin | */false | '') die "$TEST_USER has shell '$shell': sshd cannot run commands for it" ;;
  esac
  [[ -d $home ]] || install -d -o "$TEST_USER" -g "$group" -m 0755 "$home"
  # StrictModes: the home and ~/.ssh must not be group/world-writable.
  chmod go-w "$home"
  if [[ -L $home/.ssh ]]; then die "$home/.ssh is a symlink"; fi
  install -d -o "$TEST_USER" -g "$group" -m 0700 "$home/.ssh"

  # authorized_keys: keep foreign lines, replace ours.
  local ak=$home/.ssh/authorized_keys k
  if [[ -L $ak ]]; then die "$ak is a symlink"; fi
  {
    if [[ -f $ak ]]; then grep -vF " $AUTH_TAG:" "$ak" || true; fi
    for k in id_ed25519 id_encrypted id_agent id_rsa; do
      printf '%s %s:%s\n' "$(pubkey "$CLIENT/$k.pub")" "$AUTH_TAG" "$k"
    done
  } | if write_if_changed "$ak" "$TEST_USER:$group" 0600; then log "updated $ak"; fi
}

# Does this sshd know PerSourcePenalties (OpenSSH >= 9.8; Debian 12 has 9.2)?
# Compare `sshd -t` with and without it, so another config error is no "no".
PSP_SUPPORTED=
per_source_penalties_supported() {
  if [[ -z $PSP_SUPPORTED ]]; then
    local args=(-t -f /dev/null -o "HostKey=$1")
    PSP_SUPPORTED=0
    if "$SSHD" "${args[@]}" -o PerSourcePenalties=no </dev/null >/dev/null 2>&1; then
      PSP_SUPPORTED=1
    elif ! "$SSHD" "${args[@]}" </dev/null >/dev/null 2>&1; then
      die "sshd -t fails even without PerSourcePenalties: $("$SSHD" "${args[@]}" </dev/null 2>&1 | head -n 3)"
    fi
  fi
  ((PSP_SUPPORTED))
}

declare -A HOST_CHANGED=()

write_host() {
  local name=$1 dir=$BASE/hosts/$1 changed=0
  install -d -o root -g root -m 0755 "$dir"
  gen_key "$dir/ssh_host_ed25519_key" ed25519 "yonder-$name-host" && changed=1
  gen_key "$dir/ssh_host_rsa_key" rsa "yonder-$name-host" && changed=1
  ssh2_host_keys "$name" && changed=1
  local penalties='# PerSourcePenalties: not supported by this sshd'
  if per_source_penalties_supported "$dir/ssh_host_ed25519_key"; then
    penalties='PerSourcePenalties no'
  fi
  # Lines of the ssh2 block's hosts first (sshd keeps the first value); nothing for the others.
  local extra
  extra=$(ssh2_host_config "$name")
  [[ -z $extra ]] || extra+=$'\n'
  if write_if_changed "$dir/sshd_config" root:root 0644 <<EOF; then changed=1; fi
# Written by yonder scripts/sshd-hosts.sh: test host "$name" (do not edit).
# Started as: $SSHD -f $dir/sshd_config -E $dir/sshd.log
${extra}ListenAddress $ADDR:${PORT[$name]}
AddressFamily inet
HostKey $dir/ssh_host_ed25519_key
HostKey $dir/ssh_host_rsa_key
PidFile $dir/sshd.pid
LogLevel VERBOSE

AllowUsers $TEST_USER
PermitRootLogin no
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
HostbasedAuthentication no
PermitEmptyPasswords no
# PAM: the test user's password is locked ("!" in /etc/shadow), which sshd
# treats as "account locked" when UsePAM is no; PAM only checks expiry.
UsePAM yes
AuthorizedKeysFile .ssh/authorized_keys
StrictModes yes

MaxStartups 100
$penalties
MaxSessions ${MAX_SESSIONS[$name]}
AllowTcpForwarding ${TCP_FORWARDING[$name]}
X11Forwarding no
PermitTunnel no
PermitUserEnvironment no
PrintMotd no
PrintLastLog no
UseDNS no
Subsystem sftp internal-sftp
EOF
  "$SSHD" -t -f "$dir/sshd_config" </dev/null >/dev/null 2>"$dir/sshd-t.err" ||
    die "sshd -t rejects $dir/sshd_config: $(cat "$dir/sshd-t.err")"
  rm -f "$dir/sshd-t.err"
  ((changed)) && HOST_CHANGED[$name]=1
  return 0
}

write_known_hosts() {
  local name kh=$CLIENT/known_hosts type tmp ed
  {
    for name in "${HOSTS[@]}"; do
      for type in ed25519 rsa; do
        printf '[%s]:%s %s\n' "$ADDR" "${PORT[$name]}" "$(pubkey "$BASE/hosts/$name/ssh_host_${type}_key.pub")"
      done
    done
  } | if write_if_changed "$kh" root:root 0644; then rm -f "$CLIENT/known_hosts_hashed"; fi

  # Hashed copy: new salts on each run, so only rebuilt when known_hosts changed.
  if [[ ! -s $CLIENT/known_hosts_hashed ]]; then
    tmp=$(mktemp "$CLIENT/known_hosts_hashed.XXXXXX")
    cat "$kh" >"$tmp"
    ssh-keygen -q -H -f "$tmp" </dev/null >/dev/null 2>&1 || die "ssh-keygen -H failed"
    rm -f "$tmp.old"
    grep -q '^|1|' "$tmp" || die "ssh-keygen -H wrote no hashed entries"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$CLIENT/known_hosts_hashed"
    log "wrote $CLIENT/known_hosts_hashed"
  fi

  : | write_if_changed "$CLIENT/known_hosts_empty" root:root 0644 || true

  install -d -o root -g root -m 0700 "$CHANGED_KEYS"
  gen_key "$CHANGED_KEYS/ssh_host_ed25519_key" ed25519 yonder-changed-host || true
  gen_key "$CHANGED_KEYS/ssh_host_rsa_key" rsa yonder-changed-host || true
  for type in ed25519 rsa; do
    if cmp -s <(pubkey "$CHANGED_KEYS/ssh_host_${type}_key.pub") \
      <(pubkey "$BASE/hosts/target/ssh_host_${type}_key.pub"); then
      die "the 'changed' $type key equals target's host key"
    fi
  done
  {
    for type in ed25519 rsa; do
      printf '[%s]:%s %s\n' "$ADDR" "${PORT[target]}" "$(pubkey "$CHANGED_KEYS/ssh_host_${type}_key.pub")"
    done
  } | write_if_changed "$CLIENT/known_hosts_changed" root:root 0644 || true

  ed=$(pubkey "$BASE/hosts/target/ssh_host_ed25519_key.pub")
  printf '[%s]:%s %s\n@revoked * %s\n' "$ADDR" "${PORT[target]}" "$ed" "$ed" |
    write_if_changed "$CLIENT/known_hosts_revoked" root:root 0644 || true
}

# alias NAME PORT KNOWN_HOSTS IDENTITY|- [HOSTNAME]: one Host block of client/config.
ssh_alias() {
  local name=$1 port=$2 kh=$3 id=$4
  printf 'Host %s\n' "$name"
  printf '  HostName %s\n  Port %s\n  User %s\n' "${5:-$ADDR}" "$port" "$TEST_USER"
  if [[ $id == - ]]; then
    printf '  IdentitiesOnly no\n  IdentityFile none\n'
  else
    printf '  IdentitiesOnly yes\n  IdentityFile %s\n' "$id"
  fi
  printf '  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n' "$kh"
  printf '  StrictHostKeyChecking yes\n  BatchMode yes\n'
  printf '  UpdateHostKeys no\n  CheckHostIP no\n  HashKnownHosts no\n'
  printf '  PreferredAuthentications publickey\n  PasswordAuthentication no\n  KbdInteractiveAuthentication no\n'
  printf '  ConnectTimeout 10\n'
}

write_client_config() {
  local id=$CLIENT/id_ed25519 kh=$CLIENT/known_hosts
  {
    echo "# Written by yonder scripts/sshd-hosts.sh (do not edit)."
    echo "# Use: ssh -F $CLIENT/config <alias> (with -F, ~/.ssh/config and /etc/ssh/ssh_config are not read)."
    echo "# id_agent is in no IdentityFile: load it with ssh-add for target-agent."
    echo
    ssh_alias target "${PORT[target]}" "$kh" "$id"
    printf '  ServerAliveInterval 5\n\n'
    ssh_alias jump "${PORT[jump]}" "$kh" "$id"
    echo
    ssh_alias via-jump "${PORT[target]}" "$kh" "$id"
    printf '  ProxyJump jump\n\n'
    ssh_alias target-hashed "${PORT[target]}" "$CLIENT/known_hosts_hashed" "$id"
    echo
    ssh_alias target-unknown "${PORT[target]}" "$CLIENT/known_hosts_empty" "$id"
    echo
    ssh_alias target-changed "${PORT[target]}" "$CLIENT/known_hosts_changed" "$id"
    echo
    ssh_alias target-revoked "${PORT[target]}" "$CLIENT/known_hosts_revoked" "$id"
    echo
    ssh_alias target-encrypted "${PORT[target]}" "$kh" "$CLIENT/id_encrypted"
    echo
    ssh_alias target-agent "${PORT[target]}" "$kh" -
    echo
    ssh_alias narrow "${PORT[narrow]}" "$kh" "$id"
    echo
    ssh2_client_aliases
  } | if write_if_changed "$CLIENT/config" root:root 0600; then log "wrote $CLIENT/config"; fi
}

prepare() {
  check_base
  install -d -o root -g root -m 0755 "$BASE" "$BASE/hosts"
  install -d -o root -g root -m 0700 "$CLIENT"
  # Privilege-separation directory of Debian's sshd (normally made by systemd).
  install -d -o root -g root -m 0755 "$PRIVSEP_DIR"

  gen_key "$CLIENT/id_ed25519" ed25519 yonder-test-client || true
  gen_key "$CLIENT/id_encrypted" ed25519 yonder-test-client-encrypted "$PASSPHRASE" || true
  gen_key "$CLIENT/id_agent" ed25519 yonder-test-client-agent || true
  gen_key "$CLIENT/id_rsa" rsa yonder-test-client-rsa || true
  ssh2_prepare
  ssh-keygen -y -P "$PASSPHRASE" -f "$CLIENT/id_encrypted" </dev/null >/dev/null 2>&1 ||
    die "$CLIENT/id_encrypted does not open with the passphrase '$PASSPHRASE' (delete it to regenerate)"

  local h
  for h in "${HOSTS[@]}"; do write_host "$h"; done
  write_known_hosts
  ssh2_known_hosts
  write_client_config
  ensure_user
  prepare_login_hosts
}


# ---------------------------------------------------------------- daemons

stop_host() {
  local name=$1 lpid conns
  lpid=$(listener_pid "$name")
  # Collect the connections before the listener dies (they get reparented).
  mapfile -t conns < <(connection_pids "$name")
  if [[ -n $lpid ]]; then
    log "stopping $name (listener pid $lpid, ${#conns[@]} connection process(es))"
    kill_pids "$lpid"
  elif ((${#conns[@]})); then
    log "$name: listener not running; killing ${#conns[@]} leftover connection process(es)"
  else
    log "$name is not running"
  fi
  kill_pids "${conns[@]}"
  rm -f "$BASE/hosts/$name/sshd.pid"
}

start_host() {
  local name=$1 dir=$BASE/hosts/$1 lpid i
  lpid=$(listener_pid "$name")
  if [[ -n $lpid ]]; then
    if [[ -z ${HOST_CHANGED[$name]:-} ]] && host_answers "$name"; then
      log "$name already running (pid $lpid, $ADDR:${PORT[$name]})"
      return 0
    fi
    if [[ -n ${HOST_CHANGED[$name]:-} ]]; then
      log "$name: config or keys changed; restarting"
    else
      log "$name: pid $lpid does not answer; restarting"
    fi
    stop_host "$name"
  fi
  if port_open "${PORT[$name]}"; then
    die "port ${PORT[$name]} on $ADDR is in use by another process (not our $name sshd)"
  fi
  install -d -o root -g root -m 0755 "$PRIVSEP_DIR"
  touch "$dir/sshd.log"
  chmod 0644 "$dir/sshd.log"
  rm -f "$dir/sshd.pid"
  log "starting $name on $ADDR:${PORT[$name]}"
  # sshd daemonises (setsid, std fds to /dev/null) once it listens.
  # shellcheck disable=SC2094 # -E appends to the log; early errors too.
  "$SSHD" -f "$dir/sshd_config" -E "$dir/sshd.log" </dev/null >/dev/null 2>>"$dir/sshd.log" ||
    die "$SSHD failed to start for $name"
  for ((i = 0; i < 100; i++)); do
    if [[ -n $(listener_pid "$name") ]] && host_answers "$name"; then
      log "$name is up (pid $(listener_pid "$name"))"
      return 0
    fi
    sleep 0.1
  done
  die "$name did not answer on $ADDR:${PORT[$name]} within 10 s"
}

# ---------------------------------------------------------------- commands

# check_ports NAME...: fail early when another process holds one of the ports.
check_ports() {
  local h
  for h; do
    if [[ -z $(listener_pid "$h") ]] && port_open "${PORT[$h]}"; then
      die "port ${PORT[$h]} on $ADDR is in use by another process (not the $h sshd of $BASE)"
    fi
  done
}

cmd_start() {
  need_root
  cmd_install
  take_lock
  local t=$SECONDS h
  check_ports "${HOSTS[@]}"
  prepare
  for h in "${HOSTS[@]}"; do start_host "$h"; done
  start_login_hosts
  log "hosts up (${SECONDS}s total, $((SECONDS - t))s after install); use: ssh -F $CLIENT/config target"
}

cmd_stop() {
  need_root
  [[ -d $BASE ]] || { log "$BASE does not exist; nothing to stop"; return 0; }
  take_lock
  local h
  for h in "${HOSTS[@]}"; do stop_host "$h"; done
  stop_login_hosts
  log "stopped"
}

cmd_stop_host() {
  need_root
  valid_host "${1:-}"
  [[ -d $BASE ]] || { log "$BASE does not exist; nothing to stop"; return 0; }
  take_lock
  stop_host "$1"
}

cmd_start_host() {
  need_root
  valid_host "${1:-}"
  cmd_install
  take_lock
  check_ports "$1"
  prepare
  start_host "$1"
}

cmd_kill_connections() {
  need_root
  local h conns total=0
  for h in "${HOSTS[@]}"; do
    mapfile -t conns < <(connection_pids "$h")
    if ((${#conns[@]})); then
      log "$h: killing ${#conns[@]} connection process(es): ${conns[*]}"
      kill_pids "${conns[@]}"
      total=$((total + ${#conns[@]}))
    fi
  done
  log "killed $total connection process(es); listeners untouched"
}

cmd_status() {
  local rc=0 h lpid
  for h in "${HOSTS[@]}"; do
    lpid=$(listener_pid "$h")
    if [[ -z $lpid ]]; then
      echo "$h ($ADDR:${PORT[$h]}): not running"
      rc=1
    elif host_answers "$h"; then
      echo "$h ($ADDR:${PORT[$h]}): running (pid $lpid)"
    else
      echo "$h ($ADDR:${PORT[$h]}): pid $lpid does not answer"
      rc=1
    fi
  done
  login_hosts_status || rc=1
  if ((rc == 0)); then echo "status: up"; else echo "status: down"; fi
  return $rc
}

# shq STRING: single-quoted for sh.
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

cmd_env() {
  check_base
  local kv
  for kv in \
    "YONDER_SSH_DIR=$BASE" \
    "YONDER_SSH_CONFIG=$CLIENT/config" \
    "YONDER_SSH_CLIENT_DIR=$CLIENT" \
    "YONDER_SSH_HOST=$ADDR" \
    "YONDER_SSH_USER=$TEST_USER" \
    "YONDER_SSH_PORT_TARGET=${PORT[target]}" \
    "YONDER_SSH_PORT_JUMP=${PORT[jump]}" \
    "YONDER_SSH_PORT_NARROW=${PORT[narrow]}" \
    "YONDER_SSH_NARROW_MAX_SESSIONS=${MAX_SESSIONS[narrow]}" \
    "YONDER_SSH_KEY=$CLIENT/id_ed25519" \
    "YONDER_SSH_KEY_ENCRYPTED=$CLIENT/id_encrypted" \
    "YONDER_SSH_KEY_PASSPHRASE=$PASSPHRASE" \
    "YONDER_SSH_KEY_AGENT=$CLIENT/id_agent" \
    "YONDER_SSH_KNOWN_HOSTS=$CLIENT/known_hosts" \
    "YONDER_SSH_KNOWN_HOSTS_HASHED=$CLIENT/known_hosts_hashed" \
    "YONDER_SSH_KNOWN_HOSTS_EMPTY=$CLIENT/known_hosts_empty" \
    "YONDER_SSH_KNOWN_HOSTS_CHANGED=$CLIENT/known_hosts_changed" \
    "YONDER_SSH_KNOWN_HOSTS_REVOKED=$CLIENT/known_hosts_revoked" \
    "YONDER_SSH_LOG_TARGET=$BASE/hosts/target/sshd.log" \
    "YONDER_SSH_LOG_JUMP=$BASE/hosts/jump/sshd.log" \
    "YONDER_SSH_LOG_NARROW=$BASE/hosts/narrow/sshd.log" \
    "YONDER_SSH_KEY_RSA=$CLIENT/id_rsa" \
    "YONDER_SSH_KNOWN_HOSTS_ALIAS=$CLIENT/known_hosts_alias" \
    "YONDER_SSH_KNOWN_HOSTS_CA=$CLIENT/known_hosts_ca" \
    "YONDER_SSH_KNOWN_HOSTS_CA_REVOKED=$CLIENT/known_hosts_ca_revoked" \
    "YONDER_SSH_HOST_CA=$HOST_CA/ca.pub" \
    "YONDER_SSH_KEY_CERT=$CLIENT/id_cert" \
    $(login_env); do
    printf 'export %s=%s\n' "${kv%%=*}" "$(shq "${kv#*=}")"
  done
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
}

main() {
  case ${1:-} in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    kill-connections) cmd_kill_connections ;;
    stop-host) cmd_stop_host "${2:-}" ;;
    start-host) cmd_start_host "${2:-}" ;;
    env) cmd_env ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
  esac
}

main "$@"
