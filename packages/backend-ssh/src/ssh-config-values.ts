/** What OpenSSH's config resolution gives for one destination, before yonder reads it: the first value of each directive, as `ssh -G` prints them, with Host, Match (and its final pass), Include, `-F` and the system file handled as readconf.c does. */

import { isIP } from 'node:net';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { type ConfigLine, globRegex, readConfigFile } from './ssh-config-reader.js';

/** The system-wide ssh config, read after the user's (never with `-F`). */
export const SYSTEM_CONFIG = '/etc/ssh/ssh_config';

/** Where the config comes from and who is asking. */
export interface ConfigSource {
  /**
   * Like `ssh -F FILE`: read only this file, which must exist (`none`: no file at all). Without
   * it: `~/.ssh/config`, then /etc/ssh/ssh_config, each skipped when missing.
   */
  configFile?: string;
  /** Read these user config files in order instead, each skipped when missing (tests). */
  configFiles?: readonly string[];
  /** The home directory for `~`, `%d` and relative Includes. Default: this user's. */
  home?: string;
  /** The local user name (`%u`, `Match localuser`). Default: this user's. */
  localUser?: string;
  /** The uid the config files must belong to (or root), as that user's ssh requires. Default: this process's. */
  localUid?: number;
}

/** Set before the config is read, as ssh's command line does (`-l`, `-p`, `-J`): they win. */
export interface ConfigOverrides {
  user?: string | null;
  port?: number | null;
  /** A jump list given as `-J`: the config's ProxyJump and ProxyCommand are then ignored. */
  proxyJump?: string | null;
}

/** The resolved values of one destination. */
export interface ConfigValues {
  /** The name given (`%n`, `Match originalhost`). */
  originalHost: string;
  /** HostName with `%h` expanded, lowercased unless it is an address. */
  hostname: string;
  user: string;
  port: number;
  /** IdentityFile values as written (defaults when none is set), `none` included. */
  identityFiles: string[];
  /** Whether IdentityFile was set at all (then the defaults are not added). */
  identityFilesExplicit: boolean;
  certificateFiles: string[];
  /** ProxyJump as written, or null (none or unset). */
  proxyJump: string | null;
  /** ProxyCommand as written, or null (none or unset). */
  proxyCommand: string | null;
  /** HostKeyAlias, lowercased, or null. */
  hostKeyAlias: string | null;
  /** The first line of every other directive that applied, by lowercase keyword. */
  lines: ReadonlyMap<string, ConfigLine>;
  /** `Match exec` commands ssh would have run, and Match criteria this reader does not know. */
  unsupportedMatches: string[];
  home: string;
  localUser: string;
}

const DEFAULT_IDENTITIES = [
  'id_rsa',
  'id_ecdsa',
  'id_ecdsa_sk',
  'id_ed25519',
  'id_ed25519_sk',
  'id_xmss',
  'id_dsa',
].map((name) => `~/.ssh/${name}`);

/**
 * A comma-separated ssh pattern list with `!` negation. `hostNames` compares case-insensitively
 * (ssh's match_hostname lowercases both); user names are compared exactly.
 */
export function patternListMatches(list: string, given: string, hostNames: boolean): boolean {
  const subject = hostNames ? given.toLowerCase() : given;
  const lowerPatterns = hostNames;
  let matched = false;
  for (const item of list.split(',')) {
    const negated = item.startsWith('!');
    const pattern = negated ? item.slice(1) : item;
    if (globRegex(lowerPatterns ? pattern.toLowerCase() : pattern).test(subject)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function expandHostName(value: string, host: string): string {
  return value.replace(/%([%h])/g, (_, token: string) => (token === '%' ? '%' : host));
}

function lowerHost(host: string): string {
  return isIP(host) ? host : host.toLowerCase();
}

/**
 * Resolve a destination's config the way OpenSSH 9 does: one pass in file order where the first
 * value of each directive wins (IdentityFile and CertificateFile accumulate), `Host` patterns
 * matched case-sensitively against the name given, `Match` on all, host, originalhost, user,
 * localuser, canonical and final (a `Match final` or `canonical` re-reads the config with the
 * HostName, as ssh's final pass does), ProxyJump and ProxyCommand competing (the first wins),
 * Include relative to ~/.ssh. `Match exec` is never run: it is listed in `unsupportedMatches`
 * when ssh would have run it.
 * @throws YonderError `E_TRANSPORT` when the `-F` file is missing or a file cannot be read.
 */
export function resolveConfig(
  destination: { host: string; user?: string | null; port?: number | null },
  source: ConfigSource = {},
  overrides: ConfigOverrides = {},
): ConfigValues {
  const home = source.home ?? homedir();
  const localUser = source.localUser ?? userInfo().username;
  const originalHost = destination.host;
  const lines = new Map<string, ConfigLine>();
  const identityFiles: string[] = [];
  const certificateFiles: string[] = [];
  const unsupportedMatches: string[] = [];
  let proxyCommand: string | null = null;
  let jumpHost: string | null = overrides.proxyJump ?? null;
  if (jumpHost !== null) proxyCommand = 'none';
  const user = destination.user ?? overrides.user ?? null;
  const port = destination.port ?? overrides.port ?? null;
  let finalPass = false;
  let wantFinal = false;
  let hostForHost = originalHost;

  const currentUser = (): string => user ?? lines.get('user')?.args[0] ?? localUser;
  const currentHost = (): string => {
    const set = lines.get('hostname')?.args[0];
    if (finalPass) return hostForHost;
    return set === undefined ? originalHost : expandHostName(set, originalHost);
  };

  const match = (criteria: string[], file: string, line: number): boolean => {
    let result = true;
    let attributes = 0;
    for (let index = 0; index < criteria.length; index += 1) {
      const word = criteria[index] as string;
      if (word.startsWith('#')) break;
      const negate = word.startsWith('!');
      const attribute = (negate ? word.slice(1) : word).toLowerCase();
      if (attribute === 'all') {
        if (attributes > 1 || criteria.length > index + 1) return false;
        return result ? !negate : false;
      }
      attributes += 1;
      if (attribute === 'canonical' || attribute === 'final') {
        if (attribute === 'final') wantFinal = true;
        if (finalPass === negate) result = false;
        continue;
      }
      const value = criteria[index + 1];
      index += 1;
      if (value === undefined) return false;
      let matched: boolean;
      if (attribute === 'host') matched = patternListMatches(value, currentHost(), true);
      else if (attribute === 'originalhost')
        matched = patternListMatches(value, originalHost, true);
      else if (attribute === 'user') matched = patternListMatches(value, currentUser(), false);
      else if (attribute === 'localuser') matched = patternListMatches(value, localUser, false);
      else {
        if (attribute !== 'exec' || result) {
          const text = `Match ${word} ${JSON.stringify(value)} (${file}:${line})`;
          if (!unsupportedMatches.includes(text)) unsupportedMatches.push(text);
        }
        matched = false;
      }
      if (matched === negate) result = false;
    }
    return attributes > 0 && result;
  };

  const apply = (line: ConfigLine): void => {
    const { keyword } = line;
    if (keyword === 'identityfile' || keyword === 'certificatefile') {
      const list = keyword === 'identityfile' ? identityFiles : certificateFiles;
      const value = line.args[0] as string;
      if (!list.includes(value)) list.push(value);
      if (!lines.has(keyword)) lines.set(keyword, line);
      return;
    }
    if (keyword === 'proxycommand') {
      if (jumpHost !== null && jumpHost.toLowerCase() !== 'none') return;
      proxyCommand ??= line.raw;
      return;
    }
    if (keyword === 'proxyjump') {
      if (proxyCommand !== null || jumpHost !== null) return;
      jumpHost = line.args[0] as string;
      if (jumpHost.toLowerCase() !== 'none') proxyCommand = 'none';
      return;
    }
    if (!lines.has(keyword)) lines.set(keyword, line);
  };

  const readAll = (): void => {
    const handlers = { hostName: () => hostForHost, match, apply };
    const place = { home, ...(source.localUid === undefined ? {} : { uid: source.localUid }) };
    if (source.configFiles) {
      for (const file of source.configFiles)
        readConfigFile(file, { user: true, required: false, place }, handlers);
    } else if (source.configFile !== undefined) {
      if (source.configFile.toLowerCase() !== 'none')
        readConfigFile(source.configFile, { user: true, required: true, place }, handlers);
    } else {
      readConfigFile(
        join(home, '.ssh', 'config'),
        { user: true, required: false, place },
        handlers,
      );
      readConfigFile(SYSTEM_CONFIG, { user: false, required: false, place }, handlers);
    }
  };

  readAll();
  const canonicalize = lines.get('canonicalizehostname')?.args[0]?.toLowerCase();
  if (wantFinal || (canonicalize !== undefined && canonicalize !== 'no')) {
    hostForHost = lowerHost(currentHost());
    finalPass = true;
    readAll();
  }
  const hostname = lowerHost(finalPass ? hostForHost : currentHost());
  const configuredPort = lines.get('port')?.args[0];
  const alias = lines.get('hostkeyalias')?.args[0];
  const none = (value: string | null): string | null =>
    value === null || value.toLowerCase() === 'none' ? null : value;
  return {
    originalHost,
    hostname,
    user: currentUser(),
    port: port ?? (configuredPort && /^\d+$/.test(configuredPort) ? Number(configuredPort) : 22),
    identityFiles: identityFiles.length > 0 ? identityFiles : DEFAULT_IDENTITIES,
    identityFilesExplicit: identityFiles.length > 0,
    certificateFiles,
    proxyJump: none(jumpHost),
    proxyCommand: none(proxyCommand),
    hostKeyAlias: alias && alias.toLowerCase() !== 'none' ? alias.toLowerCase() : null,
    lines,
    unsupportedMatches,
    home,
    localUser,
  };
}
