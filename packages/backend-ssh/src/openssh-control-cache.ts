/** ssh's own control settings for a host (ControlMaster, ControlPath, ControlPersist, ServerAliveInterval, ConnectTimeout, as `ssh -G` resolves them), kept for a minute in the private control directory while none of the config files ssh read changes, so that a short-lived yonder process does not run `ssh -G` before each command. */
import { statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { UntrustedPathError, YonderError } from '@yonder/core';
import { readCacheEntry, writePrivateFileAtomic } from '@yonder/core/backend-kit';
import {
  lastLines,
  parseResolved,
  runSsh,
  type SshProgram,
  type SshResolved,
} from './openssh-control.js';

/** How long a resolution is used at most, even when no file ssh read has changed. */
export const CONTROL_SETTINGS_TTL_MS = 60_000;

/** The keys of `ssh -G` that decide the options yonder adds (see `controlArguments`). */
const CONTROL_KEYS = [
  'controlmaster',
  'controlpath',
  'controlpersist',
  'serveraliveinterval',
  'connecttimeout',
] as const;

/** A cache entry is a few lines; anything larger is not one of ours. */
const MAX_ENTRY_BYTES = 64 * 1024;

/** The home directory ssh reads `~/.ssh/config` from: the account's (ssh does not read $HOME for it). */
const accountHome = (): string => userInfo().homedir;

/** The default config files ssh reads without `-F`, watched whether or not they exist yet. */
const DEFAULT_CONFIGS = (): string[] => [
  join(accountHome(), '.ssh', 'config'),
  '/etc/ssh/ssh_config',
];

interface Entry {
  at: number;
  key: string;
  /** Each file or directory watched, with its identity and times (null: it did not exist). */
  files: Array<[string, string | null]>;
  settings: Record<string, string[]>;
}

/** What identifies a file's content without reading it: device, inode, size, times. */
function mark(path: string): string | null {
  try {
    const info = statSync(path, { bigint: true });
    return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
  } catch {
    return null;
  }
}

/**
 * The files and directories whose change could change ssh's answer, from what `ssh -G -vv`
 * says it read (its `Reading configuration data` lines, the directories of the files read and
 * of `Include` patterns that matched nothing); null when the answer cannot be kept: ssh ran a
 * command to decide (`Match exec`), matched on the network (`Match localnetwork`), or said
 * nothing about the files it read.
 */
function watchedFiles(stderr: string, config: readonly string[]): string[] | null {
  if (/^debug\d: checking match for '[^'\n]*\b(exec|localnetwork)\b/m.test(stderr)) return null;
  if (/^debug1: Executing command:/m.test(stderr)) return null;
  const read = [...stderr.matchAll(/^debug1: Reading configuration data (.+)$/gm)].map((match) =>
    resolve(match[1] as string),
  );
  const unmatched = [...stderr.matchAll(/^debug1: .* include (.+) matched no files$/gm)].map(
    (match) => resolve(match[1] as string),
  );
  const named = config.length > 0 ? [resolve(config[1] as string)] : DEFAULT_CONFIGS();
  if (read.length === 0 && named.some((file) => mark(file) !== null)) return null;
  // A file added beside one read, or where an Include found none, changes its directory.
  const directories = [...read, ...unmatched].map((file) => dirname(file));
  return [...new Set([...named, ...read, ...directories])];
}

function readEntry(file: string): Entry | null {
  const value = readCacheEntry(file, MAX_ENTRY_BYTES) as Partial<Entry> | null;
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof value.at !== 'number' ||
    typeof value.key !== 'string' ||
    !Array.isArray(value.files) ||
    !value.files.every(
      (entry) =>
        Array.isArray(entry) &&
        typeof entry[0] === 'string' &&
        (typeof entry[1] === 'string' || entry[1] === null),
    ) ||
    typeof value.settings !== 'object' ||
    value.settings === null ||
    !Object.values(value.settings).every(
      (values) => Array.isArray(values) && values.every((item) => typeof item === 'string'),
    )
  )
    return null;
  return value as Entry;
}

/**
 * The user's own ControlMaster, ControlPath, ControlPersist and ServerAliveInterval for `host` (as `ssh -G` with
 * the `config` options resolves them; only those keys), from `file` when it holds an answer for the same ssh,
 * home, options, host and working directory, younger than `ttlMs`, and no file ssh read has
 * changed since; else from `ssh -G`, kept in `file` for the next process.
 * @throws YonderError `E_TRANSPORT` when ssh cannot read its config;
 * UntrustedPathError when `file` cannot be written for someone else owns it.
 */
export async function userControlSettings(
  ssh: SshProgram,
  config: readonly string[],
  host: string,
  file: string,
  ttlMs = CONTROL_SETTINGS_TTL_MS,
): Promise<SshResolved> {
  const relative = config.some((arg, index) => index > 0 && !isAbsolute(arg));
  // The keys kept are part of it: an entry that lacks one is never taken for one that has it.
  const key = JSON.stringify([
    CONTROL_KEYS,
    ssh.program,
    ssh.env.HOME ?? '',
    accountHome(),
    config,
    host,
    relative ? process.cwd() : '',
  ]);
  const cached = readEntry(file);
  const age = cached ? Date.now() - cached.at : -1;
  if (
    cached &&
    cached.key === key &&
    age >= 0 &&
    age < ttlMs &&
    cached.files.every(([path, seen]) => mark(path) === seen)
  )
    return new Map(Object.entries(cached.settings));
  const result = await runSsh(ssh, ['-G', '-vv', ...config, '--', host]);
  if (result.code !== 0)
    throw new YonderError(
      'E_TRANSPORT',
      `ssh could not read its config for ${host}: ${lastLines(result.stderr.replace(/^debug\d: .*$/gm, '')) || `exit status ${result.code}`}`,
    );
  const resolved = parseResolved(result.stdout);
  const settings: Record<string, string[]> = {};
  for (const name of CONTROL_KEYS) {
    const values = resolved.get(name);
    if (values) settings[name] = [...values];
  }
  const answer: SshResolved = new Map(Object.entries(settings));
  const watched = watchedFiles(result.stderr, config);
  if (watched) {
    const entry: Entry = {
      at: Date.now(),
      key,
      files: watched.map((path) => [path, mark(path)]),
      settings,
    };
    try {
      // A cache needs no durability: a lost entry means one more `ssh -G`.
      writePrivateFileAtomic(file, JSON.stringify(entry), { sync: false });
    } catch (error) {
      if (UntrustedPathError.isInstance(error)) throw error;
    }
  }
  return answer;
}
