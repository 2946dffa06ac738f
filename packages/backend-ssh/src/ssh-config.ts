import { readdirSync, readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { splitCommandLine, YonderError } from '@yonder/core';

/** What yonder needs to reach one host, after ssh_config is applied. */
export interface ResolvedHost {
  /** The name the profile gave (a Host alias or a host name). */
  alias: string;
  hostname: string;
  port: number;
  user: string;
  identityFiles: string[];
  /** Whether IdentityFile was set explicitly (otherwise the defaults are tried if they exist). */
  identityFilesExplicit: boolean;
  identitiesOnly: boolean;
  /** The agent socket, or null for none. */
  identityAgent: string | null;
  /** Jump hosts, in order (`[user@]host[:port]` each), or empty. */
  proxyJump: string[];
  serverAliveIntervalSeconds: number;
  serverAliveCountMax: number;
  userKnownHostsFiles: string[];
  globalKnownHostsFiles: string[];
  strictHostKeyChecking: 'yes' | 'accept-new' | 'no' | 'ask';
  hashKnownHosts: boolean;
  connectTimeoutSeconds: number | null;
  /** Directives the resolver met but cannot honour (reported, never silently ignored). */
  warnings: string[];
}

interface Line {
  keyword: string;
  args: string[];
  file: string;
  line: number;
}

type Block =
  | { kind: 'host'; patterns: string[] }
  | { kind: 'match'; criteria: string[] }
  | { kind: 'global' };

interface Parsed {
  entries: Array<{ block: Block; line: Line }>;
}

function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return join(homedir(), path.slice(2));
  return path;
}

function globFiles(pattern: string): string[] {
  const dir = dirname(pattern);
  const name = basename(pattern);
  if (!/[*?]/.test(name)) return [pattern];
  const regex = new RegExp(
    `^${name
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  try {
    return readdirSync(dir)
      .filter((entry) => regex.test(entry))
      .sort()
      .map((entry) => join(dir, entry));
  } catch {
    return [];
  }
}

function parseFile(
  file: string,
  includeBase: string,
  depth = 0,
  into: Parsed = { entries: [] },
  block: Block = { kind: 'global' },
): Parsed {
  if (depth > 16)
    throw new YonderError(
      'E_INVALID_PROFILE',
      `ssh config: Include nesting is too deep at ${file}.`,
    );
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return into;
    throw new YonderError(
      'E_TRANSPORT',
      `Cannot read the ssh config ${file}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  let current = block;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.replace(/\r$/, '').trim();
    if (!trimmed || trimmed.startsWith('#')) return;
    const match = /^([A-Za-z][A-Za-z0-9]*)\s*(?:=\s*|\s+)(.*)$/.exec(trimmed);
    if (!match) return;
    const keyword = (match[1] as string).toLowerCase();
    let args: string[];
    try {
      args = splitCommandLine(match[2] as string, `${file}:${index + 1}`);
    } catch {
      return;
    }
    const line: Line = { keyword, args, file, line: index + 1 };
    if (keyword === 'host') {
      current = { kind: 'host', patterns: args };
      return;
    }
    if (keyword === 'match') {
      current = { kind: 'match', criteria: args };
      return;
    }
    if (keyword === 'include') {
      for (const pattern of args) {
        const full = isAbsolute(expandHome(pattern))
          ? expandHome(pattern)
          : join(includeBase, pattern);
        for (const included of globFiles(full))
          parseFile(included, includeBase, depth + 1, into, current);
      }
      return;
    }
    into.entries.push({ block: current, line });
  });
  return into;
}

function patternListMatches(patterns: readonly string[], name: string): boolean {
  let matched = false;
  for (const list of patterns) {
    for (const pattern of list.split(',')) {
      const negated = pattern.startsWith('!');
      const body = negated ? pattern.slice(1) : pattern;
      const regex = new RegExp(
        `^${body
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
        'i',
      );
      if (regex.test(name)) {
        if (negated) return false;
        matched = true;
      }
    }
  }
  return matched;
}

function blockApplies(
  block: Block,
  alias: string,
  hostname: string,
  user: string,
  warnings: string[],
): boolean {
  if (block.kind === 'global') return true;
  if (block.kind === 'host') return patternListMatches(block.patterns, alias);
  const criteria = block.criteria;
  for (let index = 0; index < criteria.length; index += 1) {
    const criterion = (criteria[index] as string).toLowerCase();
    if (criterion === 'all') continue;
    const value = criteria[index + 1];
    index += 1;
    if (value === undefined) return false;
    if (criterion === 'host') {
      if (!patternListMatches([value], hostname)) return false;
    } else if (criterion === 'originalhost') {
      if (!patternListMatches([value], alias)) return false;
    } else if (criterion === 'user') {
      if (!patternListMatches([value], user)) return false;
    } else if (criterion === 'localuser') {
      if (!patternListMatches([value], userInfo().username)) return false;
    } else {
      warnings.push(
        `ssh config: "Match ${criterion}" is not supported; that block is not applied.`,
      );
      return false;
    }
  }
  return true;
}

/** Split `[user@]host[:port]` (or `[user@][v6]:port`). */
export function splitDestination(text: string): {
  user: string | null;
  host: string;
  port: number | null;
} {
  let rest = text;
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

export interface ResolveOptions {
  /** The ssh config files to read, in order (default: ~/.ssh/config, then /etc/ssh/ssh_config). */
  configFiles?: readonly string[];
  /** The environment (for SSH_AUTH_SOCK). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Resolve a destination (`alias`, `host`, `user@host:port`) through ssh_config the way OpenSSH
 * does for the directives yonder uses: the first value wins, IdentityFile accumulates,
 * Host patterns with `*`, `?` and `!`, Include, and the Match criteria all, host,
 * originalhost, user and localuser. Tokens `%h %p %r %u %d %n %%` and `~` are expanded.
 */
export function resolveHost(destination: string, options: ResolveOptions = {}): ResolvedHost {
  const env = options.env ?? process.env;
  const given = splitDestination(destination);
  const files = options.configFiles ?? [join(homedir(), '.ssh', 'config'), '/etc/ssh/ssh_config'];
  const entries = files.flatMap(
    (file) => parseFile(file, file.startsWith('/etc/') ? '/etc/ssh' : dirname(file)).entries,
  );
  const warnings: string[] = [];
  const values = new Map<string, string[]>();
  const identityFiles: string[] = [];
  const alias = given.host;
  // Two passes, as OpenSSH re-reads for `Match host` after HostName is known.
  for (let pass = 0; pass < 2; pass += 1) {
    const hostname = values.get('hostname')?.[0] ?? alias;
    const user = given.user ?? values.get('user')?.[0] ?? userInfo().username;
    for (const { block, line } of entries) {
      if (pass === 1 && block.kind !== 'match') continue;
      if (!blockApplies(block, alias, hostname, user, pass === 0 ? warnings : [])) continue;
      if (line.keyword === 'identityfile') {
        if (pass === 0 || block.kind === 'match') identityFiles.push(...line.args);
        continue;
      }
      if (!values.has(line.keyword)) values.set(line.keyword, line.args);
    }
  }
  const first = (key: string): string | undefined => values.get(key)?.[0];
  const hostname = first('hostname') ?? alias;
  const port = given.port ?? (first('port') ? Number(first('port')) : 22);
  const user = given.user ?? first('user') ?? userInfo().username;
  const expand = (value: string): string =>
    expandHome(
      value.replace(/%([%hprudnC])/g, (_, token: string) => {
        switch (token) {
          case '%':
            return '%';
          case 'h':
            return hostname;
          case 'p':
            return String(port);
          case 'r':
            return user;
          case 'u':
            return userInfo().username;
          case 'd':
            return homedir();
          case 'n':
            return alias;
          default:
            return `%${token}`;
        }
      }),
    );
  for (const unsupported of [
    'proxycommand',
    'certificatefile',
    'pkcs11provider',
    'gssapiauthentication',
    'controlmaster',
    'hostkeyalias',
    'knownhostscommand',
  ]) {
    const value = first(unsupported);
    if (
      value !== undefined &&
      !(unsupported === 'controlmaster' && value === 'no') &&
      !(unsupported === 'gssapiauthentication' && value === 'no') &&
      value !== 'none'
    ) {
      warnings.push(
        `ssh config: ${unsupported} is not supported by yonder's SSH transport and is ignored.`,
      );
    }
  }
  const agent = first('identityagent');
  const strict = (first('stricthostkeychecking') ?? 'ask').toLowerCase();
  const jump = first('proxyjump');
  const explicit = identityFiles.length > 0;
  return {
    alias,
    hostname,
    port,
    user,
    identityFiles: (explicit
      ? identityFiles
      : ['~/.ssh/id_ed25519', '~/.ssh/id_ecdsa', '~/.ssh/id_rsa']
    ).map(expand),
    identityFilesExplicit: explicit,
    identitiesOnly: (first('identitiesonly') ?? 'no').toLowerCase() === 'yes',
    identityAgent:
      agent === undefined
        ? (env.SSH_AUTH_SOCK ?? null)
        : agent.toLowerCase() === 'none'
          ? null
          : agent === 'SSH_AUTH_SOCK'
            ? (env.SSH_AUTH_SOCK ?? null)
            : expand(agent.replace(/^\$\{?(\w+)\}?$/, (_, name: string) => env[name] ?? '')),
    proxyJump: jump && jump.toLowerCase() !== 'none' ? jump.split(',') : [],
    serverAliveIntervalSeconds: Number(first('serveraliveinterval') ?? 0),
    serverAliveCountMax: Number(first('serveralivecountmax') ?? 3),
    userKnownHostsFiles: (
      values.get('userknownhostsfile') ?? ['~/.ssh/known_hosts', '~/.ssh/known_hosts2']
    )
      .filter((file) => file !== 'none')
      .map(expand),
    globalKnownHostsFiles: (
      values.get('globalknownhostsfile') ?? [
        '/etc/ssh/ssh_known_hosts',
        '/etc/ssh/ssh_known_hosts2',
      ]
    )
      .filter((file) => file !== 'none')
      .map(expand),
    strictHostKeyChecking:
      strict === 'accept-new'
        ? 'accept-new'
        : strict === 'no' || strict === 'off'
          ? 'no'
          : strict === 'ask'
            ? 'ask'
            : 'yes',
    hashKnownHosts: (first('hashknownhosts') ?? 'no').toLowerCase() === 'yes',
    connectTimeoutSeconds: first('connecttimeout') ? Number(first('connecttimeout')) : null,
    warnings,
  };
}
