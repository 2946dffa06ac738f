/** The ssh config as the ssh2 transport reads it: a destination resolved through ssh_config (as OpenSSH does), its tokens expanded, and what ssh2 cannot honour listed. */
import { createHash } from 'node:crypto';
import { hostname as localHostName, userInfo } from 'node:os';
import { join } from 'node:path';
import { YonderError } from '@yonder/core';
import { reviewDirectives } from './ssh-config-directives.js';
import {
  type ConfigOverrides,
  type ConfigSource,
  type ConfigValues,
  resolveConfig,
} from './ssh-config-values.js';

/** What yonder needs to reach one host, after ssh_config is applied. */
export interface ResolvedHost {
  /** The name the profile gave (a Host alias or a host name). */
  alias: string;
  hostname: string;
  port: number;
  user: string;
  /** Identity files to try, expanded (`IdentityFile none` entries dropped). */
  identityFiles: string[];
  /** Whether IdentityFile was set explicitly (otherwise the defaults are tried if they exist). */
  identityFilesExplicit: boolean;
  identitiesOnly: boolean;
  /** Whether public-key authentication is allowed at all (`PubkeyAuthentication`). */
  pubkeyAuthentication: boolean;
  /** The agent socket, or null for none. */
  identityAgent: string | null;
  /** ProxyJump as written (a comma list of `[user@]host[:port]` or `ssh://` URIs), or null. */
  proxyJump: string | null;
  /** ProxyCommand as written (tokens not yet expanded), or null. */
  proxyCommand: string | null;
  /** The name host keys are looked up and recorded under, instead of the host name. */
  hostKeyAlias: string | null;
  /** CertificateFile values (ssh2 cannot use them; named in an authentication failure). */
  certificateFiles: string[];
  serverAliveIntervalSeconds: number;
  serverAliveCountMax: number;
  userKnownHostsFiles: string[];
  globalKnownHostsFiles: string[];
  strictHostKeyChecking: 'yes' | 'accept-new' | 'no' | 'ask';
  hashKnownHosts: boolean;
  connectTimeoutSeconds: number | null;
  /** Directives that applied and that the ssh2 transport ignores (reported, never silently). */
  warnings: string[];
  /** Directives ssh2 cannot honour and that make connecting without them wrong: connecting is refused. */
  refusals: string[];
}

/** Split `[user@]host[:port]`, `[user@][v6]:port` or `ssh://[user@]host[:port]`. */
export function splitDestination(text: string): {
  user: string | null;
  host: string;
  port: number | null;
} {
  let rest = text.startsWith('ssh://') ? text.slice(6).replace(/\/$/, '') : text;
  let user: string | null = null;
  const at = rest.lastIndexOf('@');
  if (at > 0) {
    user = rest.slice(0, at);
    rest = rest.slice(at + 1);
  }
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  if (bracket)
    return { user, host: bracket[1] as string, port: bracket[2] ? Number(bracket[2]) : null };
  const colon = rest.lastIndexOf(':');
  if (colon > 0 && rest.indexOf(':') === colon && /^\d+$/.test(rest.slice(colon + 1))) {
    return { user, host: rest.slice(0, colon), port: Number(rest.slice(colon + 1)) };
  }
  return { user, host: rest, port: null };
}

export interface ResolveOptions extends ConfigSource {
  /** The environment (SSH_AUTH_SOCK, `${VAR}` in paths). */
  env?: NodeJS.ProcessEnv;
  /** Values given as on ssh's command line (a jump hop's user, port and remaining hops). */
  overrides?: ConfigOverrides;
}

/**
 * The `%` tokens and `${VAR}` of a path-like value (IdentityFile, IdentityAgent,
 * UserKnownHostsFile, CertificateFile), as ssh expands them, then a leading `~`.
 * @throws YonderError `E_INVALID_PROFILE` for an unknown token or an unset variable.
 */
export function expandTokens(
  value: string,
  values: Pick<
    ConfigValues,
    'hostname' | 'port' | 'user' | 'originalHost' | 'home' | 'localUser'
  > & {
    hostKeyAlias: string | null;
  },
  env: NodeJS.ProcessEnv,
): string {
  const local = localHostName();
  const tokens: Record<string, () => string> = {
    '%': () => '%',
    C: () =>
      createHash('sha1')
        .update(`${local}${values.hostname}${values.port}${values.user}`)
        .digest('hex'),
    L: () => local.split('.')[0] as string,
    d: () => values.home,
    h: () => values.hostname,
    i: () => String(userInfo().uid),
    k: () => values.hostKeyAlias ?? values.originalHost,
    l: () => local,
    n: () => values.originalHost,
    p: () => String(values.port),
    r: () => values.user,
    u: () => values.localUser,
  };
  const expanded = value
    .replace(/%(.?)/g, (_, token: string) => {
      const make = tokens[token];
      if (!make)
        throw new YonderError(
          'E_INVALID_PROFILE',
          `ssh config: unknown token %${token} in "${value}".`,
        );
      return make();
    })
    .replace(/\$\{(\w+)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined)
        throw new YonderError(
          'E_INVALID_PROFILE',
          `ssh config: the environment variable ${name} in "${value}" is not set.`,
        );
      return found;
    });
  if (expanded === '~') return values.home;
  if (expanded.startsWith('~/')) return join(values.home, expanded.slice(2));
  return expanded;
}

/**
 * Resolve a destination (`alias`, `host`, `user@host:port`) through ssh_config the way OpenSSH
 * does (see `resolveConfig`), then expand the values yonder uses and review every directive
 * that applied: those the ssh2 transport ignores are `warnings`, those without which it cannot
 * connect as ssh would (`Match exec`, KnownHostsCommand, CanonicalizeHostname…) are `refusals`.
 * @throws YonderError `E_TRANSPORT` when the `-F` file is missing or a file cannot be read.
 */
export function resolveHost(destination: string, options: ResolveOptions = {}): ResolvedHost {
  const env = options.env ?? process.env;
  const given = splitDestination(destination);
  const values = resolveConfig(given, options, options.overrides);
  const { warnings, refusals } = reviewDirectives(values);
  const first = (key: string): string | undefined => values.lines.get(key)?.args[0];
  const all = (key: string): string[] | undefined => values.lines.get(key)?.args;
  const yes = (value: string | undefined): boolean =>
    value !== undefined && ['yes', 'true'].includes(value.toLowerCase());
  const expand = (value: string): string => expandTokens(value, values, env);
  const agent = first('identityagent');
  const strict = (first('stricthostkeychecking') ?? 'ask').toLowerCase();
  const files = (key: string, defaults: string[]): string[] =>
    (all(key) ?? defaults).filter((file) => file.toLowerCase() !== 'none').map(expand);
  return {
    alias: values.originalHost,
    hostname: values.hostname,
    port: values.port,
    user: values.user,
    identityFiles: values.identityFiles.filter((file) => file.toLowerCase() !== 'none').map(expand),
    identityFilesExplicit: values.identityFilesExplicit,
    identitiesOnly: yes(first('identitiesonly')),
    pubkeyAuthentication: first('pubkeyauthentication')?.toLowerCase() !== 'no',
    identityAgent:
      agent === undefined
        ? (env.SSH_AUTH_SOCK ?? null)
        : agent.toLowerCase() === 'none'
          ? null
          : agent === 'SSH_AUTH_SOCK'
            ? (env.SSH_AUTH_SOCK ?? null)
            : expand(agent.replace(/^\$(\w+)$/, (_, name: string) => `\${${name}}`)),
    proxyJump: values.proxyJump,
    proxyCommand: values.proxyCommand,
    hostKeyAlias: values.hostKeyAlias,
    certificateFiles: values.certificateFiles
      .filter((file) => file.toLowerCase() !== 'none')
      .map(expand),
    serverAliveIntervalSeconds: Number(first('serveraliveinterval') ?? 0),
    serverAliveCountMax: Number(first('serveralivecountmax') ?? 3),
    userKnownHostsFiles: files('userknownhostsfile', ['~/.ssh/known_hosts', '~/.ssh/known_hosts2']),
    globalKnownHostsFiles: files('globalknownhostsfile', [
      '/etc/ssh/ssh_known_hosts',
      '/etc/ssh/ssh_known_hosts2',
    ]),
    strictHostKeyChecking:
      strict === 'accept-new'
        ? 'accept-new'
        : ['no', 'off', 'false'].includes(strict)
          ? 'no'
          : strict === 'ask'
            ? 'ask'
            : 'yes',
    hashKnownHosts: yes(first('hashknownhosts')),
    connectTimeoutSeconds: first('connecttimeout') ? Number(first('connecttimeout')) : null,
    warnings,
    refusals,
  };
}
