# shellcheck shell=bash
# The ssh2 transport's test hosts, sourced by scripts/sshd-hosts.sh (which calls these
# functions): what the ssh2 transport must refuse clearly or get right (issue 14). A second
# factor after the key, a password-only host, a host that takes RSA user keys only as
# rsa-sha2-512, a host key signed by a host CA; and client aliases reached only through
# ProxyCommand (with HostKeyAlias), through a jump host that has its own ProxyJump, and
# through a ProxyJump list.
#   second  port 2231  publickey, then keyboard-interactive (a second factor)
#   passwd  port 2232  password only
#   rsa512  port 2233  RSA user keys only as rsa-sha2-512 (PubkeyAcceptedAlgorithms)
#   hostca  port 2234  a host certificate signed by $BASE/host-ca/ca
#   userca  port 2235  user certificates only (TrustedUserCAKeys $BASE/user-ca/ca.pub,
#                      AuthorizedKeysFile none); client key id_cert with id_cert-cert.pub
# Uses from sshd-hosts.sh: BASE CLIENT HOST_CA ADDR PORT TEST_USER, gen_key pubkey
# write_if_changed ssh_alias log die.

readonly SSH2_HOSTS=(second passwd rsa512 hostca userca)
declare -rA SSH2_PORT=([second]=2231 [passwd]=2232 [rsa512]=2233 [hostca]=2234 [userca]=2235)

# ssh2_prepare: the host CA, the user CA and the client key it certifies.
ssh2_prepare() {
  install -d -o root -g root -m 0700 "$HOST_CA" "$BASE/user-ca"
  gen_key "$HOST_CA/ca" ed25519 yonder-test-host-ca || true
  gen_key "$BASE/user-ca/ca" ed25519 yonder-test-user-ca || true
  gen_key "$CLIENT/id_cert" ed25519 yonder-test-client-cert || true
  local cert=$CLIENT/id_cert-cert.pub listing
  if [[ -s $cert ]]; then
    listing=$(ssh-keygen -L -f "$cert" 2>/dev/null || true)
    if grep -qF "$(ssh-keygen -l -f "$BASE/user-ca/ca.pub" | awk '{print $2}')" <<<"$listing" &&
      grep -qF "$(ssh-keygen -l -f "$CLIENT/id_cert.pub" | awk '{print $2}')" <<<"$listing"; then
      return 0
    fi
  fi
  ssh-keygen -q -s "$BASE/user-ca/ca" -I yonder-test-cert -n "$TEST_USER" -V always:forever \
    "$CLIENT/id_cert.pub" </dev/null >/dev/null 2>&1 || die "ssh-keygen could not sign id_cert.pub"
  chmod 0644 "$cert"
  log "signed $cert"
}

# ssh2_host_keys NAME: hostca's certificate (signed by the host CA); 0 if (re)made.
ssh2_host_keys() {
  local name=$1 dir=$BASE/hosts/$1
  [[ $name == hostca ]] || return 1
  local cert=$dir/ssh_host_ed25519_key-cert.pub
  local listing
  if [[ -s $cert ]]; then
    listing=$(ssh-keygen -L -f "$cert" 2>/dev/null || true)
    if grep -qF "$(ssh-keygen -l -f "$HOST_CA/ca.pub" | awk '{print $2}')" <<<"$listing" &&
      grep -qF "$(ssh-keygen -l -f "$dir/ssh_host_ed25519_key.pub" | awk '{print $2}')" <<<"$listing"; then
      return 1
    fi
  fi
  ssh-keygen -q -s "$HOST_CA/ca" -I yonder-hostca -h -n "$ADDR,[$ADDR]:${PORT[hostca]}" \
    -V always:forever "$dir/ssh_host_ed25519_key.pub" </dev/null >/dev/null 2>&1 ||
    die "ssh-keygen could not sign the host key of hostca"
  log "signed $cert"
  return 0
}

# ssh2_host_config NAME: sshd_config lines that come first (sshd keeps the first value).
ssh2_host_config() {
  case $1 in
    second)
      printf 'AuthenticationMethods publickey,keyboard-interactive\nKbdInteractiveAuthentication yes\n' ;;
    passwd)
      printf 'AuthenticationMethods password\nPasswordAuthentication yes\n' ;;
    rsa512)
      printf 'PubkeyAcceptedAlgorithms rsa-sha2-512\n' ;;
    hostca)
      printf 'HostCertificate %s\n' "$BASE/hosts/hostca/ssh_host_ed25519_key-cert.pub" ;;
    userca)
      printf 'TrustedUserCAKeys %s\nAuthorizedKeysFile none\n' "$BASE/user-ca/ca.pub" ;;
  esac
}

# ssh2_known_hosts: target's keys under a HostKeyAlias only; the host CA (and it revoked).
ssh2_known_hosts() {
  local type ca
  for type in ed25519 rsa; do
    printf 'inner.yonder.test %s\n' "$(pubkey "$BASE/hosts/target/ssh_host_${type}_key.pub")"
  done | write_if_changed "$CLIENT/known_hosts_alias" root:root 0644 || true
  ca=$(pubkey "$HOST_CA/ca.pub")
  printf '@cert-authority [%s]:%s %s\n' "$ADDR" "${PORT[hostca]}" "$ca" |
    write_if_changed "$CLIENT/known_hosts_ca" root:root 0644 || true
  printf '@cert-authority [%s]:%s %s\n@revoked * %s\n' "$ADDR" "${PORT[hostca]}" "$ca" "$ca" |
    write_if_changed "$CLIENT/known_hosts_ca_revoked" root:root 0644 || true
}

# ssh2_client_aliases: the Host blocks of client/config for the hosts above.
ssh2_client_aliases() {
  local id=$CLIENT/id_ed25519 kh=$CLIENT/known_hosts h
  # Reachable only through its ProxyCommand: the HostName does not resolve (.invalid), the
  # proxy checks that %h %p %r %n reached it expanded, then forwards through jump.
  ssh_alias inner "${PORT[target]}" "$CLIENT/known_hosts_alias" "$id" inner.yonder.invalid
  printf '  HostKeyAlias inner.yonder.test\n'
  printf '  ProxyCommand sh -c '"'"'test "$1 $3 $4" = "inner.yonder.invalid %s inner" && exec ssh -F %s -W %s:"$2" jump'"'"' proxy %%h %%p %%r %%n\n' \
    "$TEST_USER" "$CLIENT/config" "$ADDR"
  echo
  # A jump host with its own ProxyJump: target -> jump-chained -> target.
  ssh_alias jump-chained "${PORT[jump]}" "$kh" "$id"
  printf '  ProxyJump target\n\n'
  ssh_alias via-chain "${PORT[target]}" "$kh" "$id"
  printf '  ProxyJump jump-chained\n\n'
  # A ProxyJump list: target -> jump -> target.
  ssh_alias via-list "${PORT[target]}" "$kh" "$id"
  printf '  ProxyJump target,jump\n\n'
  for h in second passwd; do
    ssh_alias "$h" "${PORT[$h]}" "$kh" "$id"
    echo
  done
  ssh_alias rsa512 "${PORT[rsa512]}" "$kh" "$CLIENT/id_rsa"
  echo
  ssh_alias hostca "${PORT[hostca]}" "$CLIENT/known_hosts_ca" "$id"
  echo
  # ssh offers id_cert-cert.pub (beside the key) by itself.
  ssh_alias userca "${PORT[userca]}" "$kh" "$CLIENT/id_cert"
}
