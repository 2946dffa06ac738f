/** The host key check of one SSH hop: known_hosts under the host's name (or its HostKeyAlias), revoked and changed keys refused, a host vouched for by an @cert-authority never pinned, new keys recorded only when the profile allows it. */
import ssh2 from 'ssh2';
import {
  appendKnownHost,
  certAuthorityFor,
  checkHostKey,
  fingerprint,
  type KnownHostEntry,
  loadKnownHosts,
} from './known-hosts.js';
import type { ResolvedHost } from './ssh-config.js';

const { utils } = ssh2;

/** What the connection needs from the check: the verifier, why it refused, the algorithms to ask for. */
export interface HostVerifier {
  /** ssh2's `hostVerifier`: true to go on. */
  verify(key: Buffer): boolean;
  /** Why the last key was refused, for the error. */
  refusal(): string | null;
  /** Host key algorithms to offer: the types known_hosts has for the host (empty: ssh2's defaults). */
  serverHostKey: string[];
}

/** The name and port known_hosts knows a host by: its HostKeyAlias (no port, as ssh does), else the host name. */
export function knownHostsName(host: ResolvedHost): { name: string; port: number } {
  return host.hostKeyAlias
    ? { name: host.hostKeyAlias, port: 22 }
    : { name: host.hostname, port: host.port };
}

/**
 * The check for one hop. `label` names the hop in messages. A key is accepted when known_hosts
 * has it for the host; refused when it is revoked, when the host has other keys (changed), or
 * when it is unknown — unless `acceptNew`, which records it in the first UserKnownHostsFile,
 * but never for a host an `@cert-authority` line covers: ssh2 cannot check host certificates,
 * and a raw key pinned beside the CA would outlive the CA's revocation.
 */
export function createHostVerifier(
  host: ResolvedHost,
  options: { acceptNew: boolean; label: string },
): HostVerifier {
  const files = [...host.userKnownHostsFiles, ...host.globalKnownHostsFiles];
  let entries: KnownHostEntry[] = loadKnownHosts(files);
  const { name, port } = knownHostsName(host);
  const recordedTypes = new Set(
    entries
      .filter(
        (entry) =>
          entry.marker === null && checkHostKey([entry], name, port, entry.key).status === 'ok',
      )
      .map((entry) => entry.keyType),
  );
  const serverHostKey = [...recordedTypes].flatMap((type) =>
    type === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [type],
  );
  const shown = host.hostKeyAlias
    ? `${options.label} (known as ${host.hostKeyAlias})`
    : options.label;
  let refusal: string | null = null;
  let pinned: Buffer | null = null;
  const verify = (key: Buffer): boolean => {
    if (pinned) return pinned.equals(key);
    const parsed = utils.parseKey(key);
    const type = parsed instanceof Error ? 'unknown' : parsed.type;
    const verdict = checkHostKey(entries, name, port, key);
    const print = `${type} ${fingerprint(key)}`;
    if (verdict.status === 'ok') {
      pinned = key;
      return true;
    }
    if (verdict.status === 'revoked') {
      refusal = `The host key of ${shown} (${print}) is marked @revoked in ${verdict.entry.file}:${verdict.entry.line}; refusing to connect.`;
      return false;
    }
    if (verdict.status === 'changed') {
      const where = verdict.recorded.map((entry) => `${entry.file}:${entry.line}`).join(', ');
      refusal = `The host key of ${shown} has CHANGED (now ${print}; recorded in ${where}). This can be an attack; if the change is expected, remove the old entry and check the new key.`;
      return false;
    }
    const authority = certAuthorityFor(entries, name, port);
    if (authority) {
      refusal = `The host keys of ${shown} are vouched for by a certificate authority (@cert-authority in ${authority.file}:${authority.line}), and the ssh2 transport cannot verify host certificates; the host offered the plain key ${print}, which is not in known_hosts. Use --transport openssh (the system ssh checks the certificate).`;
      return false;
    }
    if (options.acceptNew && host.userKnownHostsFiles[0]) {
      appendKnownHost(host.userKnownHostsFiles[0], name, port, type, key, host.hashKnownHosts);
      entries = loadKnownHosts(files);
      pinned = key;
      return true;
    }
    refusal = `The host key of ${shown} is unknown (${print}). Check the fingerprint with the host's administrator, then trust it with: ssh-keyscan -p ${host.port} ${host.hostname}${host.hostKeyAlias ? ` | sed 's/^[^ ]*/${host.hostKeyAlias}/'` : ''} >> ${host.userKnownHostsFiles[0] ?? '~/.ssh/known_hosts'} (or let the profile accept new keys: transportOptions.acceptNewHostKeys).`;
    return false;
  };
  return { verify, refusal: () => refusal, serverHostKey };
}
