# Login shells, a user without setsid, and a host with a second factor, for the openssh
# transport's tests (issue 14). Sourced by scripts/sshd-hosts.sh, whose helpers it uses
# (log, die, apt_get, write_if_changed, gen_key, pubkey, proc_alive, kill_pids, port_open).
#
# The shells host (port 2205, an sshd of its own like target's), with the client key:
#   yonder-bash      login shell bash; ~/.bashrc prints on stdout ("Welcome", "SIZE 3") and stderr
#   yonder-tcsh      login shell tcsh; ~/.tcshrc prints
#   yonder-fish      login shell fish; ~/.config/fish/config.fish prints
#   yonder-nosetsid  login shell sh with a PATH holding every program but setsid
# The twofa host (port 2204, its own sshd under the PAM service sshd-2fa): user yonder-2fa,
#   AuthenticationMethods publickey,keyboard-interactive, the second factor a TOTP code
#   (libpam-google-authenticator, secret $TWOFA_SECRET; codes from oathtool). A login is counted
#   in its log as "Accepted keyboard-interactive/pam".
# Both are hosts of their own: nothing here changes the three hosts above.
# Client aliases, in client/config-login ($YONDER_SSH_CONFIG_LOGIN): bash-user tcsh-user
# fish-user nosetsid-user twofa; client/askpass-totp.sh
# answers ssh's prompt with the current code (SSH_ASKPASS, SSH_ASKPASS_REQUIRE=force).

readonly LOGIN_PACKAGES=(bash tcsh fish libpam-google-authenticator oathtool)
readonly LOGIN_USERS=(yonder-bash yonder-tcsh yonder-fish yonder-nosetsid)
readonly NOSETSID_SHELL=/usr/local/libexec/yonder-nosetsid-shell
declare -rA LOGIN_SHELL=(
  [yonder-bash]=/bin/bash
  [yonder-tcsh]=/usr/bin/tcsh
  [yonder-fish]=/usr/bin/fish
  [yonder-nosetsid]=$NOSETSID_SHELL
)
declare -rA LOGIN_ALIAS=(
  [yonder-bash]=bash-user
  [yonder-tcsh]=tcsh-user
  [yonder-fish]=fish-user
  [yonder-nosetsid]=nosetsid-user
)
readonly NOSETSID_BIN=$BASE/nosetsid-bin
readonly TWOFA_USER=yonder-2fa
readonly TWOFA_PORT=2204
readonly TWOFA_SECRET=JBSWY3DPEHPK3PXP
# sshd takes its PAM service name from argv[0]: a link of its own gives the host its own stack.
readonly TWOFA_SSHD=/usr/local/sbin/sshd-2fa
readonly TWOFA_PAM=/etc/pam.d/sshd-2fa
readonly SHELLS_PORT=2205
readonly LOGIN_HOSTS=(twofa shells)
declare -rA LOGIN_PORT=([twofa]=$TWOFA_PORT [shells]=$SHELLS_PORT)
declare -rA LOGIN_SSHD=([twofa]=$TWOFA_SSHD [shells]=$SSHD)

login_packages_installed() {
  local p
  for p in "${LOGIN_PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || return 1
  done
  command -v oathtool >/dev/null && [[ -x /usr/bin/tcsh && -x /usr/bin/fish ]]
}

install_login_packages() {
  login_packages_installed && return 0
  log "apt-get install ${LOGIN_PACKAGES[*]}"
  apt_get install -y -qq --no-install-recommends "${LOGIN_PACKAGES[@]}" ||
    { apt_get update -qq || true; apt_get install -y -qq --no-install-recommends "${LOGIN_PACKAGES[@]}"; } ||
    die "apt-get install ${LOGIN_PACKAGES[*]} failed"
}

# make_login_user NAME SHELL: the user, its password unusable ('*', not locked), the client key
# in its authorized_keys.
make_login_user() {
  local name=$1 shell=$2 home group ak
  if ! id "$name" >/dev/null 2>&1; then
    log "creating user $name ($shell)"
    useradd --create-home --home-dir "/home/$name" --shell "$shell" --user-group "$name"
  fi
  [[ $(getent passwd "$name" | cut -d: -f7) == "$shell" ]] || usermod --shell "$shell" "$name"
  usermod -p '*' "$name"
  home=$(getent passwd "$name" | cut -d: -f6)
  group=$(id -gn "$name")
  chmod go-w "$home"
  [[ ! -L $home/.ssh ]] || die "$home/.ssh is a symlink"
  install -d -o "$name" -g "$group" -m 0700 "$home/.ssh"
  ak=$home/.ssh/authorized_keys
  [[ ! -L $ak ]] || die "$ak is a symlink"
  printf '%s %s:%s\n' "$(pubkey "$CLIENT/id_ed25519.pub")" "$AUTH_TAG" id_ed25519 |
    write_if_changed "$ak" "$name:$group" 0600 || true
}

# startup_file USER PATH: stdin -> the user's startup file at PATH (relative to the home).
startup_file() {
  local name=$1 file home group
  home=$(getent passwd "$name" | cut -d: -f6)
  group=$(id -gn "$name")
  file=$home/$2
  install -d -o "$name" -g "$group" -m 0755 "$(dirname "$file")"
  write_if_changed "$file" "$name:$group" 0644 || true
}

# The PATH of yonder-nosetsid: a link to every program of the system's but setsid.
write_nosetsid_bin() {
  local dir f name
  install -d -o root -g root -m 0755 "$NOSETSID_BIN"
  for dir in /usr/local/bin /usr/bin /usr/sbin; do
    for f in "$dir"/*; do
      name=${f##*/}
      [[ $name != setsid && -x $f && ! -e $NOSETSID_BIN/$name ]] || continue
      ln -s "$f" "$NOSETSID_BIN/$name"
    done
  done
  rm -f "$NOSETSID_BIN/setsid"
  install -d -o root -g root -m 0755 "${NOSETSID_SHELL%/*}"
  printf '#!/bin/sh\n# Login shell of yonder-nosetsid (yonder scripts/sshd-hosts.sh): sh without setsid on PATH.\nPATH=%s\nexport PATH\nexec /bin/sh "$@"\n' \
    "$NOSETSID_BIN" | write_if_changed "$NOSETSID_SHELL" root:root 0755 || true
}

# login_sshd_config NAME USERS METHODS KBDINT: the host's key and sshd_config.
login_sshd_config() {
  local name=$1 users=$2 methods=$3 kbd=$4 dir=$BASE/hosts/$1
  install -d -o root -g root -m 0755 "$dir"
  gen_key "$dir/ssh_host_ed25519_key" ed25519 "yonder-$name-host" && HOST_CHANGED[$name]=1
  if write_if_changed "$dir/sshd_config" root:root 0644 <<CONFIG; then HOST_CHANGED[$name]=1; fi
# Written by yonder scripts/sshd-hosts.sh: test host "$name" (do not edit).
# Started as: ${LOGIN_SSHD[$name]} -f $dir/sshd_config -E $dir/sshd.log
ListenAddress $ADDR:${LOGIN_PORT[$name]}
AddressFamily inet
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
LogLevel VERBOSE
AllowUsers $users
PermitRootLogin no
UsePAM yes
PubkeyAuthentication yes
KbdInteractiveAuthentication $kbd
PasswordAuthentication no
AuthenticationMethods $methods
AuthorizedKeysFile .ssh/authorized_keys
StrictModes yes
MaxStartups 100
MaxSessions 10
X11Forwarding no
PrintMotd no
PrintLastLog no
UseDNS no
CONFIG
  "$SSHD" -t -f "$dir/sshd_config" </dev/null >/dev/null 2>"$dir/sshd-t.err" ||
    die "sshd -t rejects $dir/sshd_config: $(cat "$dir/sshd-t.err")"
  rm -f "$dir/sshd-t.err"
}

prepare_twofa() {
  local home group
  [[ -L $TWOFA_SSHD && $(readlink "$TWOFA_SSHD") == "$SSHD" ]] || ln -sfn "$SSHD" "$TWOFA_SSHD"
  # No password step: the TOTP code is the only keyboard-interactive prompt. noskewadj: the
  # module never rewrites the secret file, so one test leaves no state for the next.
  printf '# Written by yonder scripts/sshd-hosts.sh: the twofa test host.\nauth required pam_google_authenticator.so noskewadj\naccount include common-account\nsession required pam_unix.so\n' |
    write_if_changed "$TWOFA_PAM" root:root 0644 || true
  make_login_user "$TWOFA_USER" /bin/bash
  home=$(getent passwd "$TWOFA_USER" | cut -d: -f6)
  group=$(id -gn "$TWOFA_USER")
  printf '%s\n" WINDOW_SIZE 17\n" TOTP_AUTH\n' "$TWOFA_SECRET" |
    write_if_changed "$home/.google_authenticator" "$TWOFA_USER:$group" 0400 || true
  login_sshd_config twofa "$TWOFA_USER" publickey,keyboard-interactive yes
  printf '#!/bin/sh\n# ssh calls this with its prompt as $1 and reads the answer on stdout.\nexec oathtool --totp -b "${TOTP_SECRET:-%s}"\n' "$TWOFA_SECRET" |
    write_if_changed "$CLIENT/askpass-totp.sh" root:root 0755 || true
}

prepare_login_hosts() {
  local user name
  prepare_twofa
  write_nosetsid_bin
  for user in "${LOGIN_USERS[@]}"; do make_login_user "$user" "${LOGIN_SHELL[$user]}"; done
  printf 'echo "Welcome to the test host (from .bashrc)"\nprintf "SIZE 3\\n"\necho "bashrc on stderr" >&2\n' |
    startup_file yonder-bash .bashrc
  printf 'echo "Welcome from .tcshrc"\necho "tcshrc on stderr" > /dev/stderr\n' |
    startup_file yonder-tcsh .tcshrc
  printf 'echo "Welcome from config.fish"\necho "config.fish on stderr" >&2\n' |
    startup_file yonder-fish .config/fish/config.fish
  login_sshd_config shells "${LOGIN_USERS[*]}" publickey no
  for name in "${LOGIN_HOSTS[@]}"; do
    printf '[%s]:%s %s\n' "$ADDR" "${LOGIN_PORT[$name]}" "$(pubkey "$BASE/hosts/$name/ssh_host_ed25519_key.pub")"
  done | write_if_changed "$CLIENT/known_hosts_login" root:root 0644 || true
  write_login_client_config
}

# client/config-login: the aliases of these users and of the twofa host (a file of its own).
write_login_client_config() {
  login_client_aliases | if write_if_changed "$CLIENT/config-login" root:root 0600; then
    log "wrote $CLIENT/config-login"
  fi
}

login_client_aliases() {
  local user
  echo "# Written by yonder scripts/sshd-hosts.sh (do not edit). Use: ssh -F $CLIENT/config-login <alias>"
  for user in "${LOGIN_USERS[@]}"; do
    echo
    ssh_alias "${LOGIN_ALIAS[$user]}" "$SHELLS_PORT" "$CLIENT/known_hosts_login" "$CLIENT/id_ed25519" |
      sed "s/^  User .*/  User $user/"
  done
  printf '\nHost twofa\n  HostName %s\n  Port %s\n  User %s\n' "$ADDR" "$TWOFA_PORT" "$TWOFA_USER"
  printf '  IdentitiesOnly yes\n  IdentityFile %s\n' "$CLIENT/id_ed25519"
  printf '  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n' "$CLIENT/known_hosts_login"
  printf '  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  CheckHostIP no\n'
  printf '  PreferredAuthentications publickey,keyboard-interactive\n  KbdInteractiveAuthentication yes\n'
  printf '  PasswordAuthentication no\n  ConnectTimeout 10\n'
}

# login_host_pid NAME: the listener's pid, from its pid file, checked by its command line.
login_host_pid() {
  local dir=$BASE/hosts/$1 pid
  [[ -s $dir/sshd.pid ]] || return 0
  pid=$(tr -dc '0-9' <"$dir/sshd.pid")
  if [[ -n $pid ]] && proc_alive "$pid" &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-f $dir/sshd_config "; then
    echo "$pid"
  fi
  return 0
}

login_host_answers() {
  local name=$1 want got
  want=$(awk '{print $2}' "$BASE/hosts/$name/ssh_host_ed25519_key.pub" 2>/dev/null) || return 1
  got=$(timeout 10 ssh-keyscan -T 3 -t ed25519 -p "${LOGIN_PORT[$name]}" "$ADDR" 2>/dev/null </dev/null |
    awk '$2 == "ssh-ed25519" {print $3}') || true
  [[ -n $got && $got == "$want" ]]
}

start_login_host() {
  local name=$1 dir=$BASE/hosts/$1 pid i
  pid=$(login_host_pid "$name")
  if [[ -n $pid && -z ${HOST_CHANGED[$name]:-} ]] && login_host_answers "$name"; then
    log "$name already running (pid $pid, $ADDR:${LOGIN_PORT[$name]})"
    return 0
  fi
  stop_login_host "$name"
  ! port_open "${LOGIN_PORT[$name]}" || die "port ${LOGIN_PORT[$name]} on $ADDR is in use by another process"
  touch "$dir/sshd.log"
  chmod 0644 "$dir/sshd.log"
  log "starting $name on $ADDR:${LOGIN_PORT[$name]}"
  # An absolute path: sshd re-executes itself by it.
  "${LOGIN_SSHD[$name]}" -f "$dir/sshd_config" -E "$dir/sshd.log" </dev/null >/dev/null 2>>"$dir/sshd.log" ||
    die "${LOGIN_SSHD[$name]} failed to start for $name"
  for ((i = 0; i < 100; i++)); do
    if [[ -n $(login_host_pid "$name") ]] && login_host_answers "$name"; then return 0; fi
    sleep 0.1
  done
  die "$name did not answer on $ADDR:${LOGIN_PORT[$name]} within 10 s"
}

# stop_login_host NAME: the listener, and its connections (the processes holding its log open).
stop_login_host() {
  local name=$1 pid log=$BASE/hosts/$1/sshd.log f conns=()
  pid=$(login_host_pid "$name")
  for f in /proc/[0-9]*/fd/*; do
    [[ $(readlink "$f" 2>/dev/null) == "$log" ]] || continue
    f=${f#/proc/}
    f=${f%%/*}
    [[ $f == "${pid:-x}" || " ${conns[*]} " == *" $f "* ]] || conns+=("$f")
  done
  [[ -z $pid ]] || kill_pids "$pid"
  kill_pids "${conns[@]}"
  rm -f "$BASE/hosts/$name/sshd.pid"
}

start_login_hosts() {
  local h
  for h in "${LOGIN_HOSTS[@]}"; do start_login_host "$h"; done
}

stop_login_hosts() {
  local h
  for h in "${LOGIN_HOSTS[@]}"; do stop_login_host "$h"; done
}

login_hosts_status() {
  local h pid rc=0
  for h in "${LOGIN_HOSTS[@]}"; do
    pid=$(login_host_pid "$h")
    if [[ -n $pid ]] && login_host_answers "$h"; then
      echo "$h ($ADDR:${LOGIN_PORT[$h]}): running (pid $pid)"
    else
      echo "$h ($ADDR:${LOGIN_PORT[$h]}): not running"
      rc=1
    fi
  done
  return $rc
}

login_env() {
  printf '%s\n' \
    "YONDER_SSH_CONFIG_LOGIN=$CLIENT/config-login" \
    "YONDER_SSH_PORT_TWOFA=$TWOFA_PORT" \
    "YONDER_SSH_LOG_TWOFA=$BASE/hosts/twofa/sshd.log" \
    "YONDER_SSH_TWOFA_USER=$TWOFA_USER" \
    "YONDER_SSH_TOTP_SECRET=$TWOFA_SECRET" \
    "YONDER_SSH_ASKPASS_TOTP=$CLIENT/askpass-totp.sh" \
    "YONDER_SSH_PORT_SHELLS=$SHELLS_PORT" \
    "YONDER_SSH_LOG_SHELLS=$BASE/hosts/shells/sshd.log" \
    "YONDER_SSH_KNOWN_HOSTS_LOGIN=$CLIENT/known_hosts_login"
}
