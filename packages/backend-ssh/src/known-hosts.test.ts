import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { YonderError } from '@yonder/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendKnownHost,
  blobType,
  checkHostKey,
  fingerprint,
  hostsMatch,
  type KnownHostEntry,
  loadKnownHosts,
  lookupName,
  parseKnownHosts,
} from './known-hosts.js';

interface TestKey {
  /** The private key file ssh-keygen wrote (the public one is `${file}.pub`). */
  file: string;
  type: string;
  base64: string;
  blob: Buffer;
}

let scratch: string;
let ed: TestKey;
let ed2: TestKey;
let rsa: TestKey;
let counter = 0;

function generate(name: string, args: string[]): TestKey {
  const file = join(scratch, name);
  execFileSync('ssh-keygen', ['-q', ...args, '-N', '', '-C', `${name}@test`, '-f', file], {
    stdio: 'pipe',
  });
  const [type, base64] = readFileSync(`${file}.pub`, 'utf8').trim().split(/\s+/) as [
    string,
    string,
  ];
  return { file, type, base64, blob: Buffer.from(base64, 'base64') };
}

/** A fresh path inside the scratch directory. */
function fresh(prefix: string): string {
  counter += 1;
  return join(scratch, `${prefix}-${counter}`);
}

function write(text: string): string {
  const file = fresh('known_hosts');
  writeFileSync(file, text);
  return file;
}

/** `hosts keytype base64` for a key. */
function line(hosts: string, key: TestKey, comment = ''): string {
  return `${hosts} ${key.type} ${key.base64}${comment ? ` ${comment}` : ''}`;
}

/** A `|1|salt|hash` hostnames field built by hand, as OpenSSH's host_hash() does. */
function hashName(name: string, salt: Buffer = randomBytes(20)): string {
  const hash = createHmac('sha1', salt).update(name).digest('base64');
  return `|1|${salt.toString('base64')}|${hash}`;
}

/** Whether OpenSSH's own `ssh-keygen -F name` finds a line for `name` in `file`. */
function opensshFinds(file: string, name: string): boolean {
  try {
    const out = execFileSync('ssh-keygen', ['-F', name, '-f', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }).toString();
    return out.split('\n').some((row) => row.trim() !== '' && !row.startsWith('#'));
  } catch {
    // ssh-keygen -F exits 1 when nothing is found.
    return false;
  }
}

function parse(text: string): KnownHostEntry[] {
  return parseKnownHosts(text, '/virtual/known_hosts');
}

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-known-hosts-test-'));
  ed = generate('id_ed25519', ['-t', 'ed25519']);
  ed2 = generate('id_ed25519_other', ['-t', 'ed25519']);
  rsa = generate('id_rsa', ['-t', 'rsa', '-b', '2048']);
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('generated test keys', () => {
  it('are real, distinct keys of the requested types', () => {
    expect(ed.type).toBe('ssh-ed25519');
    expect(rsa.type).toBe('ssh-rsa');
    expect(ed.blob.equals(ed2.blob)).toBe(false);
    expect(blobType(ed.blob)).toBe('ssh-ed25519');
    expect(blobType(rsa.blob)).toBe('ssh-rsa');
  });
});

describe('fingerprint', () => {
  it.each([
    ['ed25519', () => ed],
    ['rsa', () => rsa],
  ])('matches the SHA256 field of ssh-keygen -lf (%s)', (_name, key) => {
    const { file, blob } = key();
    const out = execFileSync('ssh-keygen', ['-lf', `${file}.pub`])
      .toString()
      .trim();
    const field = out.split(/\s+/)[1];
    expect(field).toMatch(/^SHA256:[A-Za-z0-9+/]+$/);
    expect(fingerprint(blob)).toBe(field);
  });

  it('has no base64 padding', () => {
    expect(fingerprint(Buffer.from('anything'))).not.toContain('=');
  });
});

describe('blobType', () => {
  it('reads the length-prefixed type, and refuses short or absurd blobs', () => {
    expect(blobType(Buffer.alloc(0))).toBeNull();
    expect(blobType(Buffer.from([0, 0, 0]))).toBeNull();
    expect(blobType(Buffer.from([0, 0, 0, 0]))).toBeNull();
    expect(blobType(Buffer.from([0, 0, 0, 9, 0x61]))).toBeNull();
    expect(blobType(Buffer.from([0, 0, 1, 0, ...Buffer.alloc(300)]))).toBeNull();
    expect(blobType(Buffer.from([0, 0, 0, 3, 0x61, 0x62, 0x63, 0xff]))).toBe('abc');
  });
});

describe('lookupName', () => {
  it('is the lowercased bare name for port 22 and [host]:port otherwise', () => {
    expect(lookupName('Host.Example.COM', 22)).toBe('host.example.com');
    expect(lookupName('Host.Example.COM', 2222)).toBe('[host.example.com]:2222');
    expect(lookupName('::1', 2222)).toBe('[::1]:2222');
    expect(lookupName('10.0.0.1', 22)).toBe('10.0.0.1');
  });
});

describe('parseKnownHosts', () => {
  it('parses plain, bracketed and comma-list lines with their line numbers', () => {
    const text = [
      '# a comment',
      '',
      line('alpha', ed),
      line('[beta]:2222', rsa, 'some comment with spaces'),
      line('gamma,delta,10.0.0.1', ed2),
    ].join('\n');
    const entries = parseKnownHosts(text, '/x/known_hosts');
    expect(entries).toHaveLength(3);
    expect(entries.map((entry) => [entry.hosts, entry.keyType, entry.line])).toEqual([
      ['alpha', 'ssh-ed25519', 3],
      ['[beta]:2222', 'ssh-rsa', 4],
      ['gamma,delta,10.0.0.1', 'ssh-ed25519', 5],
    ]);
    expect(entries[0]?.key.equals(ed.blob)).toBe(true);
    expect(entries[1]?.key.equals(rsa.blob)).toBe(true);
    expect(entries.every((entry) => entry.file === '/x/known_hosts')).toBe(true);
    expect(entries.every((entry) => entry.marker === null)).toBe(true);
  });

  it('ignores comments (also indented), blank and whitespace-only lines', () => {
    const text = [
      '#',
      '# alpha ssh-ed25519 AAAA',
      `   # ${line('alpha', ed)}`,
      '',
      '   ',
      '\t',
      line('alpha', ed),
    ].join('\n');
    const entries = parse(text);
    expect(entries).toHaveLength(1);
    expect(entries[0]?.line).toBe(7);
  });

  it('accepts CRLF line endings, tabs and runs of whitespace between fields', () => {
    const text = [
      `alpha ${ed.type} ${ed.base64}\r`,
      `beta\t${rsa.type}\t${rsa.base64}\r`,
      `  gamma \t  ${ed2.type}   ${ed2.base64}  \t comment  \r`,
      `@revoked\tdelta\t${ed.type}\t${ed.base64}\r`,
      '',
    ].join('\n');
    const entries = parse(text);
    expect(entries.map((entry) => entry.hosts)).toEqual(['alpha', 'beta', 'gamma', 'delta']);
    expect(entries[2]?.key.equals(ed2.blob)).toBe(true);
    expect(entries[3]?.marker).toBe('revoked');
    // The key must not have picked up a trailing \r.
    expect(entries[0]?.key.equals(ed.blob)).toBe(true);
  });

  it('recognises @revoked and @cert-authority markers', () => {
    const entries = parse(
      [
        `@revoked * ${ed.type} ${ed.base64}`,
        `@cert-authority *.corp ${rsa.type} ${rsa.base64}`,
      ].join('\n'),
    );
    expect(entries.map((entry) => [entry.marker, entry.hosts])).toEqual([
      ['revoked', '*'],
      ['cert-authority', '*.corp'],
    ]);
  });

  it('skips malformed lines without dropping the good ones around them', () => {
    const text = [
      line('good1', ed),
      // too few fields
      'lonely',
      `toofew ${ed.type}`,
      `@revoked ${ed.type} ${ed.base64}`,
      '@revoked',
      // not base64 at all
      `badb64 ${ed.type} !!!not-base64!!!`,
      `badb64b ${ed.type} ${ed.base64.slice(0, 20)}*${ed.base64.slice(21)}`,
      // padding in the middle
      `badpad ${ed.type} AAAA=AAAA`,
      // field 2 does not match the type inside the blob
      `mismatch ssh-rsa ${ed.base64}`,
      `mismatch2 ssh-ed25519 ${rsa.base64}`,
      `mismatch3 ecdsa-sha2-nistp256 ${ed.base64}`,
      // a blob that is not a key at all
      `garbage ssh-ed25519 ${Buffer.from('hello world').toString('base64')}`,
      // truncated blob: the type length points past the end
      `short ssh-ed25519 ${ed.blob.subarray(0, 8).toString('base64')}`,
      // unknown markers
      `@bogus alpha ${ed.type} ${ed.base64}`,
      `@revoke alpha ${ed.type} ${ed.base64}`,
      `@REVOKED alpha ${ed.type} ${ed.base64}`,
      line('good2', rsa),
    ].join('\n');
    const entries = parse(text);
    expect(entries.map((entry) => entry.hosts)).toEqual(['good1', 'good2']);
    expect(entries.map((entry) => entry.line)).toEqual([1, 17]);
  });

  it('never throws on arbitrary junk', () => {
    const junk = ['\0\0\0', '|||', '@', '@@ @ @', '[', ']:', '|1|', 'a b c d e f', '\r\r\n'];
    expect(() => parse(junk.join('\n'))).not.toThrow();
    expect(parse(junk.join('\n'))).toEqual([]);
  });

  it('reads a file written by ssh-keyscan style tools (several types per host)', () => {
    const entries = parse([line('multi', rsa), line('multi', ed)].join('\n'));
    expect(entries.map((entry) => entry.keyType)).toEqual(['ssh-rsa', 'ssh-ed25519']);
  });
});

describe('hostsMatch', () => {
  it('matches plain names and [host]:port exactly', () => {
    expect(hostsMatch('alpha', 'alpha')).toBe(true);
    expect(hostsMatch('alpha', 'alpha2')).toBe(false);
    expect(hostsMatch('alpha', 'alph')).toBe(false);
    expect(hostsMatch('[alpha]:2222', '[alpha]:2222')).toBe(true);
    expect(hostsMatch('[alpha]:2222', 'alpha')).toBe(false);
    expect(hostsMatch('[alpha]:2222', '[alpha]:222')).toBe(false);
    expect(hostsMatch('alpha', '[alpha]:2222')).toBe(false);
    expect(hostsMatch('[::1]:2222', '[::1]:2222')).toBe(true);
  });

  it('treats regex metacharacters in names literally', () => {
    expect(hostsMatch('a.b', 'axb')).toBe(false);
    expect(hostsMatch('a+b', 'a+b')).toBe(true);
    expect(hostsMatch('a+b', 'aab')).toBe(false);
    expect(hostsMatch('[a]:1', 'a:1')).toBe(false);
    expect(hostsMatch('(a|b)', 'a')).toBe(false);
    expect(hostsMatch('a$', 'a$')).toBe(true);
  });

  it('matches any pattern of a comma list', () => {
    const field = 'alpha,beta,10.0.0.1,[gamma]:2200';
    for (const name of ['alpha', 'beta', '10.0.0.1', '[gamma]:2200'])
      expect(hostsMatch(field, name)).toBe(true);
    for (const name of ['gamma', 'alphabeta', 'alpha,beta', '10.0.0.11'])
      expect(hostsMatch(field, name)).toBe(false);
  });

  it('supports * (any run, including dots and brackets) and ? (exactly one character)', () => {
    expect(hostsMatch('*.example.com', 'a.example.com')).toBe(true);
    expect(hostsMatch('*.example.com', 'a.b.example.com')).toBe(true);
    expect(hostsMatch('*.example.com', 'example.com')).toBe(false);
    expect(hostsMatch('*', 'anything.at.all')).toBe(true);
    expect(hostsMatch('*', '[anything]:2222')).toBe(true);
    expect(hostsMatch('[*]:2222', '[host]:2222')).toBe(true);
    expect(hostsMatch('[*]:2222', '[host]:22222')).toBe(false);
    expect(hostsMatch('node??', 'node01')).toBe(true);
    expect(hostsMatch('node??', 'node1')).toBe(false);
    expect(hostsMatch('node??', 'node001')).toBe(false);
    expect(hostsMatch('10.0.0.?', '10.0.0.7')).toBe(true);
    expect(hostsMatch('10.0.0.?', '10.0.0.70')).toBe(false);
  });

  it('rejects the line when a negated pattern matches, whatever the order', () => {
    expect(hostsMatch('*.example.com,!bad.example.com', 'good.example.com')).toBe(true);
    expect(hostsMatch('*.example.com,!bad.example.com', 'bad.example.com')).toBe(false);
    expect(hostsMatch('!bad.example.com,*.example.com', 'bad.example.com')).toBe(false);
    expect(hostsMatch('bad.example.com,!bad.example.com', 'bad.example.com')).toBe(false);
    expect(hostsMatch('*,!*.internal', 'db.internal')).toBe(false);
    expect(hostsMatch('*,!*.internal', 'db.external')).toBe(true);
  });

  it('never matches a list of only negations', () => {
    expect(hostsMatch('!bad', 'good')).toBe(false);
    expect(hostsMatch('!bad', 'bad')).toBe(false);
  });

  it('is case-insensitive for patterns', () => {
    expect(hostsMatch('Alpha.Example.COM', 'alpha.example.com')).toBe(true);
    expect(hostsMatch('*.EXAMPLE.com', 'x.example.com')).toBe(true);
    expect(hostsMatch('*,!BAD', 'bad')).toBe(false);
  });

  it('ignores empty items in a comma list', () => {
    expect(hostsMatch('alpha,,beta,', 'beta')).toBe(true);
    expect(hostsMatch(',', 'beta')).toBe(false);
  });

  it('matches hand-made |1|salt|hash names (HMAC-SHA1 of the lookup name)', () => {
    const field = hashName('alpha.example.com');
    expect(hostsMatch(field, 'alpha.example.com')).toBe(true);
    expect(hostsMatch(field, 'beta.example.com')).toBe(false);
    const ported = hashName('[alpha.example.com]:2222');
    expect(hostsMatch(ported, '[alpha.example.com]:2222')).toBe(true);
    expect(hostsMatch(ported, 'alpha.example.com')).toBe(false);
  });

  it('refuses hashed fields of another type or shape', () => {
    const salt = randomBytes(20);
    const hash = createHmac('sha1', salt).update('alpha').digest('base64');
    expect(hostsMatch(`|2|${salt.toString('base64')}|${hash}`, 'alpha')).toBe(false);
    expect(hostsMatch(`|1|${salt.toString('base64')}`, 'alpha')).toBe(false);
    expect(hostsMatch(`|1|${salt.toString('base64')}|${hash}|x`, 'alpha')).toBe(false);
    expect(hostsMatch(`|1|${salt.toString('base64')}|AAAA`, 'alpha')).toBe(false);
    // a hash with the wrong salt
    expect(hostsMatch(`|1|${randomBytes(20).toString('base64')}|${hash}`, 'alpha')).toBe(false);
    // wildcards mean nothing in a hashed field
    expect(hostsMatch(hashName('*'), 'alpha')).toBe(false);
  });

  it('agrees with OpenSSH (ssh-keygen -F) on a table of patterns and names', () => {
    const cases: Array<[string, string[]]> = [
      ['alpha', ['alpha', 'ALPHA', 'alpha2', 'alph']],
      ['*.example.com,!bad.example.com', ['good.example.com', 'bad.example.com', 'example.com']],
      ['!bad.example.com,*.example.com', ['bad.example.com', 'x.example.com']],
      ['node??', ['node01', 'node1', 'node001']],
      ['h?st,*.corp', ['host', 'hoost', 'a.b.corp', 'corp']],
      ['[srv]:2222', ['[srv]:2222', 'srv', '[srv]:22']],
      ['[*]:2222', ['[anything]:2222', 'anything']],
      ['!only', ['only', 'other']],
    ];
    for (const [field, names] of cases) {
      const file = write(`${line(field, ed)}\n`);
      for (const name of names) {
        // ssh lowercases the host before it looks anything up.
        const lookup = name.toLowerCase();
        expect(
          { field, name, match: hostsMatch(field, lookup) },
          `hostsMatch(${field}, ${lookup})`,
        ).toEqual({ field, name, match: opensshFinds(file, lookup) });
      }
    }
  });
});

describe('hashed entries written by ssh-keygen -H', () => {
  it('match the same names as the plain file they came from', () => {
    const file = write(
      [
        line('alpha.example.com', ed),
        line('[beta.example.com]:2222', rsa),
        line('gamma,10.1.2.3', ed2),
        '',
      ].join('\n'),
    );
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'pipe' });
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('alpha');
    expect(text).not.toContain('beta');
    const entries = loadKnownHosts([file]);
    // ssh-keygen -H splits the comma list into one hashed line per name.
    expect(entries).toHaveLength(4);
    expect(entries.every((entry) => entry.hosts.startsWith('|1|'))).toBe(true);
    expect(checkHostKey(entries, 'alpha.example.com', 22, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'ALPHA.example.com', 22, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'alpha.example.com', 22, rsa.blob).status).toBe('changed');
    expect(checkHostKey(entries, 'beta.example.com', 2222, rsa.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'beta.example.com', 2222, ed.blob).status).toBe('changed');
    expect(checkHostKey(entries, 'beta.example.com', 22, rsa.blob).status).toBe('unknown');
    expect(checkHostKey(entries, 'gamma', 22, ed2.blob).status).toBe('ok');
    expect(checkHostKey(entries, '10.1.2.3', 22, ed2.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'delta', 22, ed2.blob).status).toBe('unknown');
  });

  it('match only the name they hash', () => {
    const file = write(`${line('alpha', ed)}\n`);
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'pipe' });
    const [entry] = loadKnownHosts([file]);
    expect(entry).toBeDefined();
    expect(hostsMatch(entry!.hosts, 'alpha')).toBe(true);
    expect(hostsMatch(entry!.hosts, 'alpha2')).toBe(false);
    expect(hostsMatch(entry!.hosts, '[alpha]:2222')).toBe(false);
  });
});

describe('checkHostKey', () => {
  it('is ok when any matching line has the key (rsa and ed25519 recorded, ed25519 offered)', () => {
    const entries = parse([line('multi', rsa), line('multi', ed)].join('\n'));
    const verdict = checkHostKey(entries, 'multi', 22, ed.blob);
    expect(verdict.status).toBe('ok');
    if (verdict.status === 'ok') expect(verdict.entry.line).toBe(2);
    expect(checkHostKey(entries, 'multi', 22, rsa.blob).status).toBe('ok');
  });

  it('is ok when the key is on a later line of the same host among other keys', () => {
    const entries = parse([line('h', ed2), line('x,h', rsa), line('*', ed)].join('\n'));
    expect(checkHostKey(entries, 'h', 22, ed.blob).status).toBe('ok');
  });

  it('says changed, with every recorded line, when the host has keys and none is this one', () => {
    const entries = parse([line('host', rsa), line('host', ed2), line('other', ed)].join('\n'));
    const verdict = checkHostKey(entries, 'host', 22, ed.blob);
    expect(verdict.status).toBe('changed');
    if (verdict.status === 'changed')
      expect(verdict.recorded.map((entry) => entry.line)).toEqual([1, 2]);
  });

  it('says changed for a key of another type than the recorded ones', () => {
    const entries = parse(line('host', rsa));
    expect(checkHostKey(entries, 'host', 22, ed.blob).status).toBe('changed');
  });

  it('says unknown when no line matches the host', () => {
    const entries = parse([line('alpha', ed), line('*.corp,!x.corp', ed)].join('\n'));
    expect(checkHostKey(entries, 'beta', 22, ed.blob)).toEqual({ status: 'unknown' });
    expect(checkHostKey(entries, 'x.corp', 22, ed.blob)).toEqual({ status: 'unknown' });
    expect(checkHostKey([], 'alpha', 22, ed.blob)).toEqual({ status: 'unknown' });
  });

  it('matches case-insensitively', () => {
    const entries = parse(line('Alpha.Example.com', ed));
    expect(checkHostKey(entries, 'ALPHA.EXAMPLE.COM', 22, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'alpha.example.com', 22, rsa.blob).status).toBe('changed');
  });

  it('honours negation: a negated host is unknown, not changed, even under a wildcard', () => {
    const entries = parse(line('*.example.com,!new.example.com', rsa));
    expect(checkHostKey(entries, 'new.example.com', 22, ed.blob).status).toBe('unknown');
    expect(checkHostKey(entries, 'old.example.com', 22, ed.blob).status).toBe('changed');
    expect(checkHostKey(entries, 'old.example.com', 22, rsa.blob).status).toBe('ok');
  });

  it('looks up [host]:port for other ports and the bare name for port 22', () => {
    const entries = parse([line('[alpha]:2222', ed), line('beta', rsa)].join('\n'));
    expect(checkHostKey(entries, 'alpha', 2222, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'alpha', 22, ed.blob).status).toBe('unknown');
    expect(checkHostKey(entries, 'beta', 22, rsa.blob).status).toBe('ok');
  });

  it('ignores [host]:22 entries for port 22 (the lookup name is the bare host)', () => {
    const entries = parse(line('[alpha]:22', ed));
    expect(checkHostKey(entries, 'alpha', 22, ed.blob).status).toBe('unknown');
    expect(checkHostKey(entries, 'alpha', 22, rsa.blob).status).toBe('unknown');
  });

  it('says changed on a [host]:port mismatch even if the bare host has the offered key', () => {
    const entries = parse([line('[alpha]:2222', rsa), line('alpha', ed)].join('\n'));
    const verdict = checkHostKey(entries, 'alpha', 2222, ed.blob);
    expect(verdict.status).toBe('changed');
    if (verdict.status === 'changed')
      expect(verdict.recorded.map((entry) => entry.line)).toEqual([1]);
  });

  it('falls back to the bare host after a [host]:port miss, but only to accept', () => {
    const entries = parse([line('alpha', ed), line('alpha', rsa)].join('\n'));
    const verdict = checkHostKey(entries, 'alpha', 2222, rsa.blob);
    expect(verdict.status).toBe('ok');
    if (verdict.status === 'ok') expect(verdict.entry.line).toBe(2);
    // The bare host has keys, none is this one: the fallback must not say "changed".
    expect(checkHostKey(entries, 'alpha', 2222, ed2.blob)).toEqual({ status: 'unknown' });
  });

  it('falls back to a hashed bare host as well', () => {
    const entries = parse(`${hashName('alpha')} ${ed.type} ${ed.base64}`);
    expect(checkHostKey(entries, 'alpha', 2222, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'alpha', 2222, rsa.blob).status).toBe('unknown');
    expect(checkHostKey(entries, 'Alpha', 22, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'alpha', 22, rsa.blob).status).toBe('changed');
  });

  it('handles bracketed IPv6 hosts', () => {
    const entries = parse([line('[::1]:2222', ed), line('fe80::1', rsa)].join('\n'));
    expect(checkHostKey(entries, '::1', 2222, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, '::1', 2222, rsa.blob).status).toBe('changed');
    expect(checkHostKey(entries, 'FE80::1', 22, rsa.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'fe80::1', 2200, rsa.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'fe80::1', 2200, ed.blob).status).toBe('unknown');
  });

  it('matches hand-made hashed [host]:port names', () => {
    const entries = parse(`${hashName('[alpha]:2222')} ${rsa.type} ${rsa.base64}`);
    expect(checkHostKey(entries, 'alpha', 2222, rsa.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'ALPHA', 2222, ed.blob).status).toBe('changed');
    expect(checkHostKey(entries, 'alpha', 22, rsa.blob).status).toBe('unknown');
  });

  it('refuses a @revoked key for its own host, even when a plain line accepts it', () => {
    const entries = parse([line('alpha', ed), `@revoked alpha ${ed.type} ${ed.base64}`].join('\n'));
    const verdict = checkHostKey(entries, 'alpha', 22, ed.blob);
    expect(verdict.status).toBe('revoked');
    if (verdict.status === 'revoked') expect(verdict.entry.line).toBe(2);
  });

  it('refuses a @revoked key whatever the host pattern of the revoked line', () => {
    const entries = parse(
      [line('alpha', ed), `@revoked some.other.host ${ed.type} ${ed.base64}`].join('\n'),
    );
    expect(checkHostKey(entries, 'alpha', 22, ed.blob).status).toBe('revoked');
    expect(checkHostKey(entries, 'alpha', 2222, ed.blob).status).toBe('revoked');
    expect(checkHostKey(entries, 'never.seen', 22, ed.blob).status).toBe('revoked');
    const hashedRevoked = parse(`@revoked ${hashName('x')} ${ed.type} ${ed.base64}`);
    expect(checkHostKey(hashedRevoked, 'y', 22, ed.blob).status).toBe('revoked');
  });

  it('does not count @revoked lines as recorded keys for other keys', () => {
    const entries = parse(`@revoked alpha ${rsa.type} ${rsa.base64}`);
    expect(checkHostKey(entries, 'alpha', 22, ed.blob)).toEqual({ status: 'unknown' });
  });

  it('ignores @cert-authority lines for plain key matching', () => {
    const entries = parse(`@cert-authority alpha,*.corp ${ed.type} ${ed.base64}`);
    expect(checkHostKey(entries, 'alpha', 22, ed.blob)).toEqual({ status: 'unknown' });
    expect(checkHostKey(entries, 'alpha', 22, rsa.blob)).toEqual({ status: 'unknown' });
    const mixed = parse(
      [`@cert-authority alpha ${ed.type} ${ed.base64}`, line('alpha', rsa)].join('\n'),
    );
    const verdict = checkHostKey(mixed, 'alpha', 22, ed.blob);
    expect(verdict.status).toBe('changed');
    if (verdict.status === 'changed')
      expect(verdict.recorded.map((entry) => entry.line)).toEqual([2]);
  });

  it('is not fooled by malformed lines naming the host', () => {
    const entries = parse(
      [`alpha ssh-rsa ${ed.base64}`, `@bogus alpha ${ed.type} ${ed.base64}`, 'alpha'].join('\n'),
    );
    expect(checkHostKey(entries, 'alpha', 22, ed.blob)).toEqual({ status: 'unknown' });
  });
});

describe('loadKnownHosts', () => {
  it('reads several files in order and records which file each line came from', () => {
    const first = write(`${line('alpha', ed)}\n`);
    const second = write(`# c\n${line('beta', rsa)}\n`);
    const entries = loadKnownHosts([first, second]);
    expect(entries.map((entry) => [entry.file, entry.line, entry.hosts])).toEqual([
      [first, 1, 'alpha'],
      [second, 2, 'beta'],
    ]);
  });

  it('treats a missing file as empty', () => {
    const present = write(`${line('alpha', ed)}\n`);
    expect(loadKnownHosts([fresh('missing')])).toEqual([]);
    expect(loadKnownHosts([fresh('missing'), present])).toHaveLength(1);
    expect(loadKnownHosts([])).toEqual([]);
  });

  it('fails closed with E_TRANSPORT on an unreadable path (a directory)', () => {
    const dir = fresh('a-directory');
    mkdirSync(dir);
    let caught: unknown;
    try {
      loadKnownHosts([write(`${line('alpha', ed)}\n`), dir]);
    } catch (error) {
      caught = error;
    }
    expect(YonderError.isInstance(caught)).toBe(true);
    expect((caught as YonderError).code).toBe('E_TRANSPORT');
    expect((caught as YonderError).message).toContain(dir);
    expect((caught as Error).cause).toBeDefined();
  });

  it('fails closed when a path component is a regular file (ENOTDIR)', () => {
    const file = write('');
    expect(() => loadKnownHosts([join(file, 'known_hosts')])).toThrow(
      expect.objectContaining({ code: 'E_TRANSPORT' }),
    );
  });
});

describe('appendKnownHost', () => {
  it('writes a plain line that then verifies, for port 22 and another port', () => {
    const file = join(fresh('home'), '.ssh', 'known_hosts');
    appendKnownHost(file, 'Alpha.Example.com', 22, ed.type, ed.blob, false);
    appendKnownHost(file, 'beta', 2222, rsa.type, rsa.blob, false);
    const text = readFileSync(file, 'utf8');
    expect(text).toBe(
      `alpha.example.com ${ed.type} ${ed.base64}\n[beta]:2222 ${rsa.type} ${rsa.base64}\n`,
    );
    const entries = loadKnownHosts([file]);
    expect(checkHostKey(entries, 'alpha.example.com', 22, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'beta', 2222, rsa.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'beta', 2222, ed.blob).status).toBe('changed');
    // OpenSSH reads it too.
    expect(opensshFinds(file, 'alpha.example.com')).toBe(true);
    expect(opensshFinds(file, '[beta]:2222')).toBe(true);
  });

  it('writes a hashed line that verifies, hides the name, and OpenSSH can find', () => {
    const file = join(fresh('home'), '.ssh', 'known_hosts');
    appendKnownHost(file, 'secret.example.com', 22, ed.type, ed.blob, true);
    appendKnownHost(file, 'secret.example.com', 2222, rsa.type, rsa.blob, true);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('secret');
    const rows = text.trimEnd().split('\n');
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatch(/^\|1\|[A-Za-z0-9+/=]+\|[A-Za-z0-9+/=]+ ssh-/);
    // Each line gets its own salt.
    expect(rows[0]?.split('|')[2]).not.toBe(rows[1]?.split('|')[2]);
    const entries = loadKnownHosts([file]);
    expect(checkHostKey(entries, 'secret.example.com', 22, ed.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'SECRET.example.com', 2222, rsa.blob).status).toBe('ok');
    expect(checkHostKey(entries, 'other', 22, ed.blob).status).toBe('unknown');
    expect(opensshFinds(file, 'secret.example.com')).toBe(true);
    expect(opensshFinds(file, '[secret.example.com]:2222')).toBe(true);
    expect(opensshFinds(file, 'other')).toBe(false);
  });

  it('creates the directory 0700 and the file 0600', () => {
    const home = fresh('home');
    const dir = join(home, '.ssh');
    const file = join(dir, 'known_hosts');
    appendKnownHost(file, 'alpha', 22, ed.type, ed.blob, false);
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('appends to an existing file without rewriting it or changing its mode', () => {
    const file = write(`# keep me\n${line('alpha', ed)}\n`);
    chmodSync(file, 0o644);
    appendKnownHost(file, 'beta', 22, rsa.type, rsa.blob, false);
    expect(readFileSync(file, 'utf8')).toBe(
      `# keep me\n${line('alpha', ed)}\nbeta ${rsa.type} ${rsa.base64}\n`,
    );
    expect(statSync(file).mode & 0o777).toBe(0o644);
  });

  it('adds a newline first when the file lacks a trailing newline', () => {
    const file = write(line('alpha', ed));
    appendKnownHost(file, 'beta', 22, rsa.type, rsa.blob, false);
    const text = readFileSync(file, 'utf8');
    expect(text).toBe(`${line('alpha', ed)}\nbeta ${rsa.type} ${rsa.base64}\n`);
    expect(loadKnownHosts([file]).map((entry) => entry.hosts)).toEqual(['alpha', 'beta']);
  });

  it('adds no blank line to an empty file or one ending in a newline', () => {
    const empty = write('');
    appendKnownHost(empty, 'beta', 22, rsa.type, rsa.blob, false);
    expect(readFileSync(empty, 'utf8')).toBe(`beta ${rsa.type} ${rsa.base64}\n`);
    const crlf = write(`${line('alpha', ed)}\r\n`);
    appendKnownHost(crlf, 'beta', 22, rsa.type, rsa.blob, false);
    expect(readFileSync(crlf, 'utf8')).toBe(
      `${line('alpha', ed)}\r\nbeta ${rsa.type} ${rsa.base64}\n`,
    );
  });

  it('refuses to write through a symlink', () => {
    const target = write(`${line('alpha', ed)}\n`);
    const link = fresh('link');
    symlinkSync(target, link);
    expect(() => appendKnownHost(link, 'beta', 22, rsa.type, rsa.blob, false)).toThrow();
    expect(readFileSync(target, 'utf8')).toBe(`${line('alpha', ed)}\n`);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it('refuses to create a file through a dangling symlink', () => {
    const target = fresh('dangling-target');
    const link = fresh('link');
    symlinkSync(target, link);
    expect(() => appendKnownHost(link, 'beta', 22, rsa.type, rsa.blob, false)).toThrow();
    expect(existsSync(target)).toBe(false);
  });
});
