/** known_hosts as OpenSSH reads it: plain and hashed names, `[host]:port`, patterns, `@revoked` and `@cert-authority` lines, and new entries appended safely. */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { closeSync, constants, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { getErrorMessage, YonderError } from '@yonder/core';
import { checkSshFile } from './ssh-file-trust.js';

/** One usable line of a known_hosts file. */
export interface KnownHostEntry {
  marker: 'revoked' | 'cert-authority' | null;
  /** The hostnames field: a pattern list or one hashed name. */
  hosts: string;
  keyType: string;
  key: Buffer;
  file: string;
  line: number;
}

/** What known_hosts says about a key offered by a host. */
export type HostKeyVerdict =
  | { status: 'ok'; entry: KnownHostEntry }
  | { status: 'unknown' }
  | { status: 'changed'; recorded: KnownHostEntry[] }
  | { status: 'revoked'; entry: KnownHostEntry };

/** `SHA256:` fingerprint of a key blob, as ssh-keygen prints it. */
export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

/** The key type written at the start of an SSH public key blob. */
export function blobType(key: Buffer): string | null {
  if (key.length < 4) return null;
  const length = key.readUInt32BE(0);
  if (length <= 0 || length > 64 || 4 + length > key.length) return null;
  return key.subarray(4, 4 + length).toString('latin1');
}

/**
 * Parse known_hosts text. Malformed lines are skipped (as OpenSSH does), never fatal;
 * blank and `#` lines are ignored; fields may be separated by spaces or tabs.
 */
export function parseKnownHosts(text: string, file: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/\r$/, '').trim();
    if (!line || line.startsWith('#')) return;
    const fields = line.split(/[ \t]+/);
    let marker: KnownHostEntry['marker'] = null;
    if (fields[0]?.startsWith('@')) {
      const word = fields.shift();
      if (word === '@revoked') marker = 'revoked';
      else if (word === '@cert-authority') marker = 'cert-authority';
      else return;
    }
    const [hosts, keyType, base64] = fields;
    if (!hosts || !keyType || !base64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return;
    const key = Buffer.from(base64, 'base64');
    if (blobType(key) !== keyType) return;
    entries.push({ marker, hosts, keyType, key, file, line: index + 1 });
  });
  return entries;
}

/** The name known_hosts records for a host: `host`, or `[host]:port` when the port is not 22. */
export function lookupName(host: string, port: number): string {
  const lower = host.toLowerCase();
  return port === 22 ? lower : `[${lower}]:${port}`;
}

function wildcard(pattern: string, name: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );
  return regex.test(name);
}

function hashedMatch(field: string, name: string): boolean {
  const parts = field.split('|');
  if (parts.length !== 4 || parts[1] !== '1') return false;
  const salt = Buffer.from(parts[2] as string, 'base64');
  const expected = Buffer.from(parts[3] as string, 'base64');
  const actual = createHmac('sha1', salt).update(name).digest();
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Whether a hostnames field matches a lookup name (patterns, negation, hashed names). */
export function hostsMatch(field: string, name: string): boolean {
  if (field.startsWith('|')) return hashedMatch(field, name);
  let matched = false;
  for (const pattern of field.split(',')) {
    if (!pattern) continue;
    if (pattern.startsWith('!')) {
      if (wildcard(pattern.slice(1), name)) return false;
    } else if (wildcard(pattern, name)) {
      matched = true;
    }
  }
  return matched;
}

/**
 * Decide on a key the way OpenSSH does: revoked keys are refused whatever the host; ok if any
 * line for the host has this key; changed if the host has keys and none is this one; unknown
 * if it has none. A `[host]:port` miss falls back to the bare host name.
 */
export function checkHostKey(
  entries: readonly KnownHostEntry[],
  host: string,
  port: number,
  key: Buffer,
): HostKeyVerdict {
  const revoked = entries.find((entry) => entry.marker === 'revoked' && entry.key.equals(key));
  if (revoked) return { status: 'revoked', entry: revoked };
  const names =
    port === 22 ? [lookupName(host, port)] : [lookupName(host, port), host.toLowerCase()];
  for (const [index, name] of names.entries()) {
    const recorded = entries.filter(
      (entry) => entry.marker === null && hostsMatch(entry.hosts, name),
    );
    const same = recorded.find((entry) => entry.key.equals(key));
    if (same) return { status: 'ok', entry: same };
    // Only the exact `[host]:port` lookup can say "changed"; the bare-name fallback only accepts.
    if (index === 0 && recorded.length > 0) return { status: 'changed', recorded };
  }
  return { status: 'unknown' };
}

/**
 * The `@cert-authority` line that vouches for a host, if any: its keys are then signed by a CA,
 * and a raw key must never be pinned beside it (a later `@revoked` of the CA would be bypassed).
 */
export function certAuthorityFor(
  entries: readonly KnownHostEntry[],
  host: string,
  port: number,
): KnownHostEntry | undefined {
  const names =
    port === 22 ? [lookupName(host, port)] : [lookupName(host, port), host.toLowerCase()];
  return entries.find(
    (entry) =>
      entry.marker === 'cert-authority' && names.some((name) => hostsMatch(entry.hosts, name)),
  );
}

/** Read known_hosts files; a missing file is empty, an unreadable one is an error (fail closed). */
export function loadKnownHosts(files: readonly string[]): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  for (const file of files) {
    let text: string;
    try {
      // A known_hosts file another user can write is no check of the host at all.
      checkSshFile(file, 'the known hosts file');
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'E_UNTRUSTED_PATH') throw error;
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new YonderError(
        'E_TRANSPORT',
        `Cannot read the known hosts file ${file}: ${getErrorMessage(error)}`,
        { cause: error },
      );
    }
    entries.push(...parseKnownHosts(text, file));
  }
  return entries;
}

/** Append one entry (hashed when asked), creating the directory 0700 and the file 0600. */
export function appendKnownHost(
  file: string,
  host: string,
  port: number,
  keyType: string,
  key: Buffer,
  hashed: boolean,
): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const name = lookupName(host, port);
  let field = name;
  if (hashed) {
    const salt = createHash('sha1').update(`${Date.now()}${Math.random()}`).digest();
    field = `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
  }
  let separator = '';
  try {
    const existing = readFileSync(file);
    if (existing.length > 0 && existing[existing.length - 1] !== 0x0a) separator = '\n';
  } catch {
    /* a new file */
  }
  const fd = openSync(
    file,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    writeSync(fd, `${separator}${field} ${keyType} ${key.toString('base64')}\n`);
  } finally {
    closeSync(fd);
  }
}
