/** Reads ssh_config files line by line the way OpenSSH's readconf.c does: keywords, arguments, Host and Match activity, and Include (relative to ~/.ssh for user files, /etc/ssh for the system file). */
import { readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { getErrorMessage, YonderError } from '@yonder/core';
import { splitCommandLine } from '@yonder/core/backend-kit';
import { checkSshFile } from './ssh-file-trust.js';

/** One directive of a config file that applies to the host being resolved. */
export interface ConfigLine {
  /** Lowercased. */
  keyword: string;
  /** The keyword as written. */
  name: string;
  args: string[];
  /** The text after the keyword and its separator, unsplit (ProxyCommand and friends take it so). */
  raw: string;
  file: string;
  line: number;
}

/** What the reader asks of the resolver while it reads. */
export interface ReadHandlers {
  /** The name `Host` patterns are matched against (the name typed; the HostName on a final pass). */
  hostName(): string;
  /** Whether a `Match` line's criteria hold (called for every Match line, as ssh does). */
  match(criteria: string[], file: string, line: number): boolean;
  /** A directive of an active block. */
  apply(line: ConfigLine): void;
}

/** The home directory Include and `~` are taken from. */
export interface ReadPlace {
  home: string;
  /** The uid the files must belong to (or root); default this process's. */
  uid?: number;
}

/** Keywords whose value is the rest of the line, not a list of words. */
const RAW_KEYWORDS = new Set([
  'proxycommand',
  'localcommand',
  'remotecommand',
  'knownhostscommand',
]);

const MAX_DEPTH = 16;

/** A glob in any path component (`*`, `?`), in lexical order; `*` never matches a leading dot. */
function globPaths(pattern: string): string[] {
  if (!/[*?[]/.test(pattern)) return [pattern];
  const parts = pattern.split('/');
  let paths = [parts[0] === '' ? '/' : (parts[0] as string)];
  if (/[*?[]/.test(parts[0] as string)) paths = ['.'];
  for (const [index, part] of parts.entries()) {
    if (index === 0 && !/[*?[]/.test(part)) continue;
    if (part === '') continue;
    if (!/[*?[]/.test(part)) {
      paths = paths.map((dir) => join(dir, part));
      continue;
    }
    const regex = globRegex(part);
    paths = paths.flatMap((dir) => {
      try {
        return readdirSync(dir)
          .filter((entry) => regex.test(entry) && (!entry.startsWith('.') || part.startsWith('.')))
          .sort()
          .map((entry) => join(dir, entry));
      } catch {
        return [];
      }
    });
  }
  return paths;
}

/** An ssh pattern (`*`, `?`, everything else literal) as a regular expression. */
export function globRegex(glob: string, flags = ''): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    flags,
  );
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

/** Where an Include's path points: `~/` from the home, relative ones in ~/.ssh (user files) or /etc/ssh. */
function includePath(pattern: string, user: boolean, place: ReadPlace): string {
  if (pattern === '~' || pattern.startsWith('~/')) return join(place.home, pattern.slice(1));
  if (isAbsolute(pattern)) return pattern;
  return user ? join(place.home, '.ssh', pattern) : join('/etc/ssh', pattern);
}

interface ReadState {
  active: boolean;
}

/**
 * Read one config file, applying the lines of active blocks in order. `required` makes a missing
 * file an error (ssh -F); otherwise a missing file is empty. `user` says whether it is a user
 * configuration (relative Includes in ~/.ssh) or the system one (in /etc/ssh).
 * @throws YonderError `E_TRANSPORT` when a file cannot be read, `E_INVALID_PROFILE` when
 *   Includes nest too deep (a loop).
 */
export function readConfigFile(
  file: string,
  options: { user: boolean; required: boolean; place: ReadPlace },
  handlers: ReadHandlers,
  state: ReadState = { active: true },
  neverMatch = false,
  depth = 0,
): boolean {
  if (depth > MAX_DEPTH)
    throw new YonderError(
      'E_INVALID_PROFILE',
      `ssh config: Include nesting is too deep at ${file} (an Include loop?).`,
    );
  let text: string;
  try {
    // As OpenSSH does ("Bad owner or permissions"): a config another user could change decides
    // where yonder logs in and with which key, so it is refused, naming the fix.
    checkSshFile(file, 'the ssh config', options.place.uid);
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'E_UNTRUSTED_PATH') throw error;
    if (code === 'ENOENT' && !options.required) return false;
    throw new YonderError(
      'E_TRANSPORT',
      code === 'ENOENT'
        ? `The ssh config ${file} does not exist (it was given as the profile's ssh config, like ssh -F).`
        : `Cannot read the ssh config ${file}: ${getErrorMessage(error)}`,
      { cause: error },
    );
  }
  text.split('\n').forEach((rawLine, index) => {
    const lineNumber = index + 1;
    const unstripped = rawLine.replace(/\r$/, '').trim();
    const trimmed = stripComment(unstripped).trim();
    if (!trimmed) return;
    const match = /^([A-Za-z][A-Za-z0-9]*)(?:\s*=\s*|\s+)([\s\S]*)$/.exec(trimmed);
    if (!match) return;
    const keyword = (match[1] as string).toLowerCase();
    const rawMatch = /^[A-Za-z][A-Za-z0-9]*(?:\s*=\s*|\s+)([\s\S]*)$/.exec(unstripped);
    const raw = RAW_KEYWORDS.has(keyword) ? (rawMatch?.[1] ?? '').trim() : (match[2] as string);
    let args: string[];
    try {
      args = splitCommandLine(match[2] as string, `${file}:${lineNumber}`);
    } catch {
      return;
    }
    if (args.length === 0) return;
    if (keyword === 'host') {
      state.active = false;
      if (neverMatch) return;
      const name = handlers.hostName();
      for (const pattern of args) {
        const negated = pattern.startsWith('!');
        if (!globRegex(negated ? pattern.slice(1) : pattern).test(name)) continue;
        if (negated) {
          state.active = false;
          return;
        }
        state.active = true;
      }
      return;
    }
    if (keyword === 'match') {
      const value = handlers.match(args, file, lineNumber);
      state.active = neverMatch ? false : value;
      return;
    }
    if (keyword === 'include') {
      for (const pattern of args) {
        const active = state.active;
        for (const included of globPaths(includePath(pattern, options.user, options.place))) {
          readConfigFile(
            included,
            { ...options, required: false },
            handlers,
            state,
            neverMatch || !active,
            depth + 1,
          );
          state.active = active;
        }
      }
      return;
    }
    if (state.active)
      handlers.apply({ keyword, name: match[1] as string, args, raw, file, line: lineNumber });
  });
  return true;
}
