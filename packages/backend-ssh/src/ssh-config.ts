import { readdirSync, readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { getErrorMessage, YonderError } from '@yonder/core';
import { splitCommandLine } from '@yonder/core/backend-kit';

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

/** A directive with the blocks it sits in: an Include's enclosing blocks, then its own. */
interface Entry {
  blocks: Block[];
  line: Line;
}

function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return join(homedir(), path.slice(2));
  return path;
}

function globToRegex(glob: string, flags = ''): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    flags,
  );
}

/** Files matching a glob in its last component, in lexical order; `*` skips dotfiles. */
function globFiles(pattern: string): string[] {
  const dir = dirname(pattern);
  const name = basename(pattern);
  if (!/[*?]/.test(name)) return [pattern];
  const regex = globToRegex(name);
  try {
    return readdirSync(dir)
      .filter((entry) => regex.test(entry) && (!entry.startsWith('.') || name.startsWith('.')))
      .sort()
      .map((entry) => join(dir, entry));
  } catch {
    return [];
  }
}

/** Remove a comment: an unquoted `#` at the start of a word runs to the end of the line. */
function stripComment(line: string): string {
  let quote: string | null = null;
  for (let index = 0; index < line.length; index += 1) {
    const char = line[index] as string;
    if (quote) {
      if (char === quote) quote = null;
    } else if (char === '"' || char === "'") {
      quote = char;
    } else if (char === '#' && (index === 0 || /\s/.test(line[index - 1] as string))) {
      return line.slice(0, index);
    }
  }
  return line;
}

function parseFile(
  file: string,
  includeBase: string,
  outer: Block[],
  into: Entry[],
  depth: number,
): void {
  if (depth > 16)
    throw new YonderError(
      'E_INVALID_PROFILE',
      `ssh config: Include nesting is too deep at ${file}.`,
    );
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new YonderError(
      'E_TRANSPORT',
      `Cannot read the ssh config ${file}: ${getErrorMessage(error)}`,
      { cause: error },
    );
  }
  let current: Block = { kind: 'global' };
  text.split('\n').forEach((raw, index) => {
    const trimmed = stripComment(raw.replace(/\r$/, '')).trim();
    if (!trimmed) return;
    const match = /^([A-Za-z][A-Za-z0-9]*)\s*(?:=\s*|\s+)(.*)$/.exec(trimmed);
    if (!match) return;
    const keyword = (match[1] as string).toLowerCase();
    let args: string[];
    try {
      args = splitCommandLine(match[2] as string, `${file}:${index + 1}`);
    } catch {
      return;
    }
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
          parseFile(included, includeBase, [...outer, current], into, depth + 1);
      }
      return;
    }
    into.push({ blocks: [...outer, current], line: { keyword, args, file, line: index + 1 } });
  });
}

function patternListMatches(patterns: readonly string[], name: string): boolean {
  let matched = false;
  for (const list of patterns) {
    for (const pattern of list.split(',')) {
      const negated = pattern.startsWith('!');
      if (globToRegex(negated ? pattern.slice(1) : pattern, 'i').test(name)) {
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
    if (!['host', 'originalhost', 'user', 'localuser'].includes(criterion)) {
      warnings.push(
        `ssh config: "Match ${criterion}" is not supported; that block is not applied.`,
      );
      return false;
    }
    const value = criteria[index + 1];
    index += 1;
    if (value === undefined) return false;
    const subject =
      criterion === 'host'
        ? hostname
        : criterion === 'originalhost'
          ? alias
          : criterion === 'user'
            ? user
            : userInfo().username;
    if (!patternListMatches([value], subject)) return false;
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
 * does for the directives yonder uses: one pass in file order, the first value wins,
 * IdentityFile accumulates, Host patterns with `*`, `?` and `!`, Include (conditional on the
 * block it sits in), and Match on all, host, originalhost, user and localuser (others are
 * reported and not applied). `%h %p %r %u %d %n %%` and `~` are expanded.
 */
export function resolveHost(destination: string, options: ResolveOptions = {}): ResolvedHost {
  const env = options.env ?? process.env;
  const given = splitDestination(destination);
  const files = options.configFiles ?? [join(homedir(), '.ssh', 'config'), '/etc/ssh/ssh_config'];
  const entries: Entry[] = [];
  for (const file of files)
    parseFile(file, file.startsWith('/etc/') ? '/etc/ssh' : dirname(file), [], entries, 0);
  const alias = given.host;
  const warnings: string[] = [];
  const values = new Map<string, string[]>();
  const identityFiles: string[] = [];
  // One pass in file order, as OpenSSH reads it: `Match host` sees the HostName set so far.
  for (const { blocks, line } of entries) {
    const hostname = (values.get('hostname')?.[0] ?? alias).replace(/%h/g, alias);
    const user = given.user ?? values.get('user')?.[0] ?? userInfo().username;
    const found: string[] = [];
    const applies = blocks.every((block) => blockApplies(block, alias, hostname, user, found));
    for (const message of found) if (!warnings.includes(message)) warnings.push(message);
    if (!applies) continue;
    if (line.keyword === 'identityfile') identityFiles.push(...line.args);
    else if (!values.has(line.keyword)) values.set(line.keyword, line.args);
  }
  const first = (key: string): string | undefined => values.get(key)?.[0];
  const yes = (value: string | undefined): boolean =>
    value !== undefined && ['yes', 'true'].includes(value.toLowerCase());
  const hostname = (first('hostname') ?? alias)
    .replace(/%%/g, '\0')
    .replace(/%h/g, alias)
    .replace(/\0/g, '%');
  const port = given.port ?? (first('port') ? Number(first('port')) : 22);
  const user = given.user ?? first('user') ?? userInfo().username;
  const expand = (value: string): string =>
    expandHome(
      value.replace(/%([%hprudn])/g, (_, token: string) => {
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
          default:
            return alias;
        }
      }),
    );
  for (const unsupported of [
    'proxycommand',
    'certificatefile',
    'pkcs11provider',
    'hostkeyalias',
    'knownhostscommand',
  ]) {
    const value = first(unsupported);
    if (value !== undefined && value.toLowerCase() !== 'none') {
      warnings.push(
        `ssh config: ${unsupported} is not supported by yonder's SSH transport and is ignored.`,
      );
    }
  }
  if (yes(first('gssapiauthentication')))
    warnings.push('ssh config: GSSAPI authentication is not supported and is ignored.');
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
    identitiesOnly: yes(first('identitiesonly')),
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
        : ['no', 'off', 'false'].includes(strict)
          ? 'no'
          : strict === 'ask'
            ? 'ask'
            : 'yes',
    hashKnownHosts: yes(first('hashknownhosts')),
    connectTimeoutSeconds: first('connecttimeout') ? Number(first('connecttimeout')) : null,
    warnings,
  };
}
