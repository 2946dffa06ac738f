import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { YonderError } from '@yonder/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ResolvedHost, resolveHost, splitDestination } from './ssh-config.js';

let scratch: string;
let counter = 0;
const me = userInfo().username;
const home = homedir();

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-ssh-config-test-'));
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A fresh directory inside the scratch directory. */
function freshDir(): string {
  counter += 1;
  const dir = join(scratch, `case-${counter}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Write an ssh config as `HOME/.ssh/config` of a fresh home (and optional extra files in that
 * ~/.ssh, where relative Includes are looked for); returns the config's path and the home.
 */
function configFile(
  body: string,
  extra: Record<string, string> = {},
): { file: string; home: string } {
  const home = freshDir();
  const dir = join(home, '.ssh');
  mkdirSync(dir);
  for (const [name, text] of Object.entries(extra)) {
    const path = join(dir, name);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
  }
  const file = join(dir, 'config');
  writeFileSync(file, body);
  return { file, home };
}

function resolve(
  destination: string,
  body: string,
  env: NodeJS.ProcessEnv = {},
  extra: Record<string, string> = {},
): ResolvedHost {
  const { file, home } = configFile(body, extra);
  // The fresh home only where included files are: `~` in values stays this user's home.
  return resolveHost(destination, {
    configFiles: [file],
    env,
    ...(Object.keys(extra).length > 0 ? { home } : {}),
  });
}

/** What OpenSSH itself resolves (`ssh -G -F file destination`), for a few keys. */
function sshG(file: string, destination: string): Record<string, string[]> {
  const out = execFileSync('ssh', ['-G', '-F', file, destination], {
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString();
  const result: Record<string, string[]> = {};
  for (const row of out.split('\n')) {
    const space = row.indexOf(' ');
    if (space < 0) continue;
    const key = row.slice(0, space);
    result[key] = [...(result[key] ?? []), row.slice(space + 1)];
  }
  return result;
}

const defaultIdentities = [
  'id_rsa',
  'id_ecdsa',
  'id_ecdsa_sk',
  'id_ed25519',
  'id_ed25519_sk',
  'id_xmss',
  'id_dsa',
].map((name) => join(home, '.ssh', name));

describe('resolveHost defaults', () => {
  it('resolves a host with no config at all to OpenSSH defaults', () => {
    const resolved = resolveHost('plain.example.com', {
      configFiles: [join(freshDir(), 'missing-config')],
      env: { SSH_AUTH_SOCK: '/run/agent.sock' },
    });
    expect(resolved).toEqual({
      alias: 'plain.example.com',
      hostname: 'plain.example.com',
      port: 22,
      user: me,
      identityFiles: defaultIdentities,
      identityFilesExplicit: false,
      identitiesOnly: false,
      pubkeyAuthentication: true,
      identityAgent: '/run/agent.sock',
      proxyJump: null,
      proxyCommand: null,
      hostKeyAlias: null,
      certificateFiles: [],
      serverAliveIntervalSeconds: 0,
      serverAliveCountMax: 3,
      userKnownHostsFiles: [join(home, '.ssh', 'known_hosts'), join(home, '.ssh', 'known_hosts2')],
      globalKnownHostsFiles: ['/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2'],
      strictHostKeyChecking: 'ask',
      hashKnownHosts: false,
      connectTimeoutSeconds: null,
      warnings: [],
      refusals: [],
    });
  });

  it('uses the default identity files when none is set, even if other blocks match', () => {
    const resolved = resolve('foo', 'Host foo\n  User bob\nHost *\n  Port 2222\n');
    expect(resolved.identityFilesExplicit).toBe(false);
    expect(resolved.identityFiles).toEqual(defaultIdentities);
  });

  it('has no agent when IdentityAgent is unset and SSH_AUTH_SOCK is not in the env', () => {
    expect(resolve('foo', '').identityAgent).toBeNull();
  });

  it('fails with E_TRANSPORT when a config path cannot be read (a directory)', () => {
    const dir = freshDir();
    let caught: unknown;
    try {
      resolveHost('foo', { configFiles: [dir], env: {} });
    } catch (error) {
      caught = error;
    }
    expect(YonderError.isInstance(caught)).toBe(true);
    expect((caught as YonderError).code).toBe('E_TRANSPORT');
    expect((caught as YonderError).message).toContain(dir);
  });
});

describe('Host blocks', () => {
  it('applies HostName, User and Port from a Host alias', () => {
    const resolved = resolve(
      'cluster',
      'Host cluster\n  HostName login.cluster.example.org\n  User alice\n  Port 2200\n',
    );
    expect(resolved.alias).toBe('cluster');
    expect(resolved.hostname).toBe('login.cluster.example.org');
    expect(resolved.user).toBe('alice');
    expect(resolved.port).toBe(2200);
  });

  it('does not apply a block for another alias', () => {
    const resolved = resolve('other', 'Host cluster\n  HostName login\n  User alice\n');
    expect(resolved.hostname).toBe('other');
    expect(resolved.user).toBe(me);
  });

  it('keeps the first value: a later Host * does not override', () => {
    const body = [
      'Host foo',
      '  User first',
      '  Port 2201',
      'Host *',
      '  User second',
      '  Port 2202',
      '  HostName wildcard.example',
      'Host foo',
      '  HostName late.example',
      '',
    ].join('\n');
    const resolved = resolve('foo', body);
    expect(resolved.user).toBe('first');
    expect(resolved.port).toBe(2201);
    expect(resolved.hostname).toBe('wildcard.example');
  });

  it('keeps the first value when a Host * comes first', () => {
    const resolved = resolve('foo', 'Host *\n  User star\nHost foo\n  User specific\n');
    expect(resolved.user).toBe('star');
  });

  it('keeps the first value across config files, in the order given', () => {
    const first = configFile('Host foo\n  User fromFirst\n').file;
    const second = configFile('Host foo\n  User fromSecond\n  Port 2300\n').file;
    const resolved = resolveHost('foo', { configFiles: [first, second], env: {} });
    expect(resolved.user).toBe('fromFirst');
    expect(resolved.port).toBe(2300);
  });

  it('matches any name of a space-separated Host list', () => {
    const body = 'Host alpha beta gamma\n  User listed\n';
    for (const name of ['alpha', 'beta', 'gamma']) expect(resolve(name, body).user).toBe('listed');
    expect(resolve('delta', body).user).toBe(me);
  });

  it('supports * and ? patterns', () => {
    const body = [
      'Host node??',
      '  User nodes',
      'Host *.corp.example',
      '  User corp',
      'Host *',
      '  User everyone',
      '',
    ].join('\n');
    expect(resolve('node01', body).user).toBe('nodes');
    expect(resolve('node1', body).user).toBe('everyone');
    expect(resolve('node001', body).user).toBe('everyone');
    expect(resolve('a.b.corp.example', body).user).toBe('corp');
    expect(resolve('corp.example', body).user).toBe('everyone');
  });

  it('treats regex metacharacters in patterns literally', () => {
    const body = 'Host a.b\n  User dotted\n';
    expect(resolve('a.b', body).user).toBe('dotted');
    expect(resolve('axb', body).user).toBe(me);
  });

  it('rejects a host matched by a !negated pattern, wherever it stands', () => {
    const body = [
      'Host *.corp !bastion.corp',
      '  ProxyJump bastion.corp',
      'Host !gateway *.corp',
      '  User viaNegFirst',
      '',
    ].join('\n');
    expect(resolve('db.corp', body).proxyJump).toBe('bastion.corp');
    expect(resolve('bastion.corp', body).proxyJump).toBeNull();
    expect(resolve('db.corp', body).user).toBe('viaNegFirst');
    expect(resolve('gateway', body).user).toBe(me);
  });

  it('never matches a Host line of only negations', () => {
    expect(resolve('anything', 'Host !foo\n  User neg\n').user).toBe(me);
    expect(resolve('foo', 'Host !foo\n  User neg\n').user).toBe(me);
  });

  it('applies global directives before the first Host line', () => {
    const resolved = resolve('foo', 'User globalUser\nPort 2400\nHost foo\n  User hostUser\n');
    expect(resolved.user).toBe('globalUser');
    expect(resolved.port).toBe(2400);
  });

  it('agrees with ssh -G on hostname, user and port for a typical config', () => {
    const file = configFile(
      [
        '# typical',
        'Host cluster login',
        '  HostName login.cluster.example.org',
        '  User alice',
        'Host *.internal !db.internal',
        '  Port 2022',
        'Host *',
        '  User fallback',
        '  Port 2200',
        '',
      ].join('\n'),
    ).file;
    for (const destination of ['cluster', 'login', 'web.internal', 'db.internal', 'other']) {
      const ours = resolveHost(destination, { configFiles: [file], env: {} });
      const theirs = sshG(file, destination);
      expect(
        { destination, hostname: ours.hostname, user: ours.user, port: String(ours.port) },
        destination,
      ).toEqual({
        destination,
        hostname: theirs.hostname?.[0],
        user: theirs.user?.[0],
        port: theirs.port?.[0],
      });
    }
  });
});

describe('config syntax', () => {
  it('accepts Keyword=value and Keyword = value', () => {
    const resolved = resolve('foo', 'Host=foo\n  User=eq\n  Port = 2500\n  HostName =spaced\n');
    expect(resolved.user).toBe('eq');
    expect(resolved.port).toBe(2500);
    expect(resolved.hostname).toBe('spaced');
  });

  it('treats keywords case-insensitively', () => {
    const resolved = resolve(
      'foo',
      'HOST foo\n  hostname lower.example\n  USER upper\n  pOrT 2600\n  identityfile /k/one\n',
    );
    expect(resolved.hostname).toBe('lower.example');
    expect(resolved.user).toBe('upper');
    expect(resolved.port).toBe(2600);
    expect(resolved.identityFiles).toEqual(['/k/one']);
  });

  it('keeps quoted values with spaces as one argument', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  IdentityFile "/keys/my key"\n  UserKnownHostsFile "/kh/a b" /kh/c\n',
    );
    expect(resolved.identityFiles).toEqual(['/keys/my key']);
    expect(resolved.userKnownHostsFiles).toEqual(['/kh/a b', '/kh/c']);
  });

  it('skips comments, blank lines and indentation with tabs, and accepts CRLF', () => {
    const body = [
      '# comment',
      '',
      '   # indented comment',
      'Host foo',
      '\tUser tabbed',
      '\t\tPort\t2700',
      '',
    ].join('\r\n');
    const resolved = resolve('foo', body);
    expect(resolved.user).toBe('tabbed');
    expect(resolved.port).toBe(2700);
  });

  it('skips a line with an unclosed quote without dropping the rest', () => {
    const resolved = resolve('foo', 'Host foo\n  IdentityFile "/broken\n  User after\n');
    expect(resolved.user).toBe('after');
    expect(resolved.identityFilesExplicit).toBe(false);
  });

  // Regression (fixed): ssh-config.ts parseFile (the splitCommandLine call, line 106) keeps `#` and what
  // follows as arguments. OpenSSH (>= 8.7, argv_split terminate_on_comment) ends the arguments
  // at an unquoted word starting with `#`: `ssh -G` gives identityfile ~/.ssh/k1 only.
  it('ends the arguments at a trailing # comment', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  IdentityFile /keys/work # work key\n  UserKnownHostsFile /kh/one # mine\n',
    );
    expect(resolved.identityFiles).toEqual(['/keys/work']);
    expect(resolved.userKnownHostsFiles).toEqual(['/kh/one']);
  });
});

describe('IdentityFile', () => {
  it('accumulates in order across matching blocks and is explicit', () => {
    const body = [
      'Host foo',
      '  IdentityFile /keys/one',
      'Host other',
      '  IdentityFile /keys/not-me',
      'Host *',
      '  IdentityFile /keys/two',
      'Host foo',
      '  IdentityFile /keys/three',
      '',
    ].join('\n');
    const resolved = resolve('foo', body);
    expect(resolved.identityFiles).toEqual(['/keys/one', '/keys/two', '/keys/three']);
    expect(resolved.identityFilesExplicit).toBe(true);
  });

  it('expands ~ and the %h %p %r %u %d %n %% tokens', () => {
    const body = [
      'Host alias',
      '  HostName real.example',
      '  User remote',
      '  Port 2222',
      '  IdentityFile ~/.ssh/%h-%p-%r',
      '  IdentityFile %d/keys/%u',
      '  IdentityFile /keys/%n',
      '  IdentityFile /keys/100%%',
      '  IdentityFile /keys/%%h',
      '  IdentityFile ~',
      '  IdentityFile /keys/not~/expanded',
      '',
    ].join('\n');
    const resolved = resolve('alias', body);
    expect(resolved.identityFiles).toEqual([
      join(home, '.ssh', 'real.example-2222-remote'),
      join(home, 'keys', me),
      '/keys/alias',
      '/keys/100%',
      '/keys/%h',
      home,
      '/keys/not~/expanded',
    ]);
  });

  it('expands %r and %p from the destination when it overrides the config', () => {
    const resolved = resolve(
      'carol@alias:2345',
      'Host alias\n  User remote\n  Port 2222\n  IdentityFile /keys/%r-%p\n',
    );
    expect(resolved.identityFiles).toEqual(['/keys/carol-2345']);
  });
});

describe('UserKnownHostsFile and GlobalKnownHostsFile', () => {
  it('takes several files on one line, expanded, and the first line wins', () => {
    const body = [
      'Host foo',
      '  HostName real.example',
      '  UserKnownHostsFile ~/.ssh/kh_%h %d/kh2',
      'Host *',
      '  UserKnownHostsFile /never',
      '',
    ].join('\n');
    const resolved = resolve('foo', body);
    expect(resolved.userKnownHostsFiles).toEqual([
      join(home, '.ssh', 'kh_real.example'),
      join(home, 'kh2'),
    ]);
  });

  it('takes none to mean no file', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  UserKnownHostsFile none\n  GlobalKnownHostsFile none\n',
    );
    expect(resolved.userKnownHostsFiles).toEqual([]);
    expect(resolved.globalKnownHostsFiles).toEqual([]);
  });

  it('honours GlobalKnownHostsFile', () => {
    const resolved = resolve('foo', 'GlobalKnownHostsFile /etc/kh/a /etc/kh/b\n');
    expect(resolved.globalKnownHostsFiles).toEqual(['/etc/kh/a', '/etc/kh/b']);
  });
});

describe('Include', () => {
  it('resolves a relative Include in ~/.ssh, as ssh does for a user config, not beside the file', () => {
    const { home } = configFile('', { 'extra.conf': 'Host foo\n  User included\n' });
    const elsewhere = freshDir();
    const file = join(elsewhere, 'my-config');
    writeFileSync(file, 'Include extra.conf\n');
    writeFileSync(join(elsewhere, 'extra.conf'), 'Host foo\n  User beside\n');
    expect(resolveHost('foo', { configFiles: [file], env: {}, home }).user).toBe('included');
    expect(resolveHost('foo', { configFile: file, env: {}, home }).user).toBe('included');
  });

  it('resolves an absolute Include', () => {
    const dir = freshDir();
    const included = join(dir, 'abs.conf');
    writeFileSync(included, 'Host foo\n  Port 2800\n');
    expect(resolve('foo', `Include ${included}\n`).port).toBe(2800);
  });

  it('expands globs in lexical order and ignores files that do not match', () => {
    const resolved = resolve(
      'foo',
      'Include conf.d/*.conf\n',
      {},
      {
        'conf.d/20-b.conf': 'Host foo\n  User b\n  IdentityFile /keys/b\n',
        'conf.d/10-a.conf': 'Host foo\n  User a\n  IdentityFile /keys/a\n',
        'conf.d/30-c.conf': 'Host foo\n  IdentityFile /keys/c\n',
        'conf.d/05-z.txt': 'Host foo\n  User txt\n  IdentityFile /keys/txt\n',
      },
    );
    expect(resolved.user).toBe('a');
    expect(resolved.identityFiles).toEqual(['/keys/a', '/keys/b', '/keys/c']);
  });

  it('supports ? in Include globs and several patterns on one line', () => {
    const resolved = resolve(
      'foo',
      'Include part? other.conf\n',
      {},
      {
        part1: 'IdentityFile /keys/p1\n',
        part2: 'IdentityFile /keys/p2\n',
        part10: 'IdentityFile /keys/p10\n',
        'other.conf': 'IdentityFile /keys/other\n',
      },
    );
    expect(resolved.identityFiles).toEqual(['/keys/p1', '/keys/p2', '/keys/other']);
  });

  it('ignores a missing include and a glob that matches nothing', () => {
    const resolved = resolve('foo', 'Include missing.conf nothing/*.conf\nUser stillHere\n');
    expect(resolved.user).toBe('stillHere');
    expect(resolved.warnings).toEqual([]);
  });

  it('is conditional inside a Host block', () => {
    const extra = { 'inc.conf': 'User fromInclude\nIdentityFile /keys/inc\n' };
    const body = 'Host foo\n  Include inc.conf\nHost *\n  User fallback\n';
    expect(resolve('foo', body, {}, extra).user).toBe('fromInclude');
    expect(resolve('foo', body, {}, extra).identityFiles).toEqual(['/keys/inc']);
    expect(resolve('bar', body, {}, extra).user).toBe('fallback');
    expect(resolve('bar', body, {}, extra).identityFilesExplicit).toBe(false);
  });

  it('does not let Host lines inside an included file leak into the including file', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  Include inc.conf\n  Port 2900\n',
      {},
      { 'inc.conf': 'Host other\n  User otherUser\n' },
    );
    expect(resolved.port).toBe(2900);
    expect(resolved.user).toBe(me);
  });

  it('resolves nested relative includes in ~/.ssh too', () => {
    const resolved = resolve(
      'foo',
      'Include sub/first.conf\n',
      {},
      {
        'sub/first.conf': 'Include sub/second.conf\n',
        'sub/second.conf': 'User nested\n',
      },
    );
    expect(resolved.user).toBe('nested');
  });

  it('fails on an Include loop instead of recursing forever', () => {
    const { file, home } = configFile('Include config\n');
    expect(() => resolveHost('foo', { configFiles: [file], env: {}, home })).toThrow(
      expect.objectContaining({ code: 'E_INVALID_PROFILE' }),
    );
  });

  // Regression (fixed): ssh-config.ts parseFile (the `include` branch, lines 119-125) starts the included file in
  // the enclosing block, but a `Host` line inside it replaces that block, so its directives
  // apply although the enclosing Host block did not match. OpenSSH passes SSHCONF_NEVERMATCH to
  // files included from an inactive block: `ssh -G` gives the local user here.
  it('keeps Host blocks of a file included from a non-matching block inactive', () => {
    const resolved = resolve(
      'target',
      'Host other\n  Include inc.conf\n',
      {},
      { 'inc.conf': 'Host target\n  User leaked\n' },
    );
    expect(resolved.user).toBe(me);
  });

  // Regression (fixed): ssh-config.ts globFiles (line 61) turns `*` into `.*`, which also matches dotfiles
  // (editor swap and backup files such as `.foo.swp`). OpenSSH uses glob(3), whose `*` does not
  // match a leading dot: `ssh -G` ignores `conf.d/.hidden` for `Include conf.d/*`.
  it('does not include dotfiles through a * glob', () => {
    const resolved = resolve(
      'foo',
      'Include conf.d/*\n',
      {},
      { 'conf.d/.hidden': 'User hidden\n', 'conf.d/visible': 'User visible\n' },
    );
    expect(resolved.user).toBe('visible');
  });
});

describe('Match', () => {
  it('applies Match host against the HostName set before it', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  HostName real.example\nMatch host real.example\n  Port 3000\n  User matched\n',
    );
    expect(resolved.port).toBe(3000);
    expect(resolved.user).toBe('matched');
  });

  it('applies Match host against the typed name when there is no HostName', () => {
    const resolved = resolve('plain', 'Match host pla?n\n  Port 3001\n');
    expect(resolved.port).toBe(3001);
  });

  it('does not apply Match host for a host that does not match', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  HostName real.example\nMatch host *.other\n  Port 3002\n',
    );
    expect(resolved.port).toBe(22);
  });

  // Regression (fixed): ssh-config.ts resolveHost (line 239, pass 0) evaluates `Match host` against the typed
  // alias, because `hostname` is computed before the pass starts. OpenSSH compares against the
  // HostName already set: `ssh -G` gives the local user here, yonder gives "wrong".
  it('does not apply Match host for the alias once HostName replaced it', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  HostName real.example\nMatch host foo\n  User wrong\n',
    );
    expect(resolved.user).toBe(me);
  });

  // Regression (fixed): ssh-config.ts resolveHost (the two passes, lines 237-250): a `Match host` that only
  // matches in the second pass cannot win over a value set by a LATER block in the first pass.
  // OpenSSH evaluates the blocks in order, so the Match block's User comes first: `ssh -G` gives
  // user alice; yonder gives bob.
  it('gives a Match host block its place in file order (first value wins)', () => {
    const resolved = resolve(
      'foo',
      [
        'Host foo',
        '  HostName real.example',
        'Match host real.example',
        '  User alice',
        'Host *',
        '  User bob',
        '',
      ].join('\n'),
    );
    expect(resolved.user).toBe('alice');
  });

  it('applies Match originalhost against the typed name, not the HostName', () => {
    const body = [
      'Host foo',
      '  HostName real.example',
      'Match originalhost real.example',
      '  Port 3003',
      'Match originalhost f*',
      '  User original',
      '',
    ].join('\n');
    const resolved = resolve('foo', body);
    expect(resolved.user).toBe('original');
    expect(resolved.port).toBe(22);
  });

  it('applies Match user to the user from the destination', () => {
    const body = 'Match user bob\n  Port 3004\n';
    expect(resolve('bob@foo', body).port).toBe(3004);
    expect(resolve('alice@foo', body).port).toBe(22);
  });

  it('applies Match user to a User set earlier in the config', () => {
    const body = 'Host foo\n  User svc\nMatch user svc\n  Port 3005\n';
    expect(resolve('foo', body).port).toBe(3005);
    expect(resolve('bar', body).port).toBe(22);
  });

  it('applies Match localuser to the local user', () => {
    expect(resolve('foo', `Match localuser ${me}\n  Port 3006\n`).port).toBe(3006);
    expect(resolve('foo', `Match localuser not-${me}\n  Port 3006\n`).port).toBe(22);
  });

  it('applies Match all, and combines criteria with AND', () => {
    expect(resolve('foo', 'Match all\n  Port 3007\n').port).toBe(3007);
    const body = 'Match originalhost foo user bob\n  Port 3008\n';
    expect(resolve('bob@foo', body).port).toBe(3008);
    expect(resolve('alice@foo', body).port).toBe(22);
    expect(resolve('bob@bar', body).port).toBe(22);
  });

  it('ends a Host block (directives after Match belong to the Match)', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  User hostUser\nMatch originalhost bar\n  Port 3009\n',
    );
    expect(resolved.user).toBe('hostUser');
    expect(resolved.port).toBe(22);
  });

  it('does not apply a Match with a missing argument', () => {
    expect(resolve('foo', 'Match host\n  Port 3010\n').port).toBe(22);
  });

  it('never runs a Match exec, and refuses the host, naming it and the openssh transport', () => {
    const canary = join(freshDir(), 'canary');
    const resolved = resolve(
      'foo',
      `Match exec "touch ${canary}"\n  Port 3011\n  User execUser\nHost *\n  User after\n`,
    );
    expect(resolved.port).toBe(22);
    expect(resolved.user).toBe('after');
    expect(resolved.refusals).toEqual([
      expect.stringMatching(/Match exec "touch .*canary".*--transport openssh/),
    ]);
    expect(existsSync(canary)).toBe(false);
  });

  it('refuses other criteria it does not know (newer OpenSSH ones)', () => {
    for (const criterion of ['tagged x', 'localnetwork 10.0.0.0/8', 'version OpenSSH*']) {
      const resolved = resolve('foo', `Match ${criterion}\n  Port 3012\n`);
      expect(resolved.port, criterion).toBe(22);
      expect(resolved.refusals, criterion).toEqual([
        expect.stringContaining(criterion.split(' ')[0] as string),
      ]);
    }
  });

  // Regression (fixed): ssh-config.ts blockApplies (line 171) treats every criterion but `all` as taking an
  // argument, so the argument-less `Match canonical` / `Match final` hit `value === undefined`
  // and are dropped with no warning (silently ignored, against the ResolvedHost.warnings
  // contract). With `Match canonical host foo` it even reads `host` as canonical's argument.
  it('applies Match final and canonical on the final pass, as ssh does', () => {
    for (const criterion of ['canonical', 'final']) {
      const resolved = resolve('foo', `Match ${criterion}\n  Port 3012\n`);
      // `canonical` alone asks for no final pass; `final` does, and then both match.
      expect(resolved.port, criterion).toBe(criterion === 'final' ? 3012 : 22);
      expect(resolved.refusals, criterion).toEqual([]);
    }
    // On the final pass Host lines are matched against the HostName.
    const final = resolve(
      'foo',
      'Host foo\n  HostName real.example\nHost real.example\n  User real\nMatch final\n  Port 3013\n',
    );
    expect(final).toMatchObject({ user: 'real', port: 3013 });
  });

  it('does not warn for a Match whose supported criteria already failed', () => {
    const resolved = resolve('foo', 'Match originalhost bar exec "true"\n  Port 3013\n');
    expect(resolved.port).toBe(22);
    expect(resolved.refusals).toEqual([]);
  });

  it('accumulates IdentityFile from a Match host block that matches after HostName', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  HostName real.example\n  IdentityFile /keys/host\nMatch host real.example\n  IdentityFile /keys/match\n',
    );
    expect(resolved.identityFiles).toEqual(['/keys/host', '/keys/match']);
  });

  // Regression (fixed): ssh-config.ts resolveHost (line 245): in the second pass every Match block that
  // already matched in the first pass pushes its IdentityFile lines again, so `Match all` (or
  // any Match that does not depend on HostName) lists each key twice. OpenSSH's
  // add_identity_file drops duplicates: `ssh -G` lists /keys/m1 once, then /keys/h1.
  it('lists an IdentityFile from a Match all block once', () => {
    const resolved = resolve(
      'foo',
      'Match all\n  IdentityFile /keys/m1\nHost foo\n  IdentityFile /keys/h1\n',
    );
    expect(resolved.identityFiles).toEqual(['/keys/m1', '/keys/h1']);
  });
});

describe('ProxyJump and ProxyCommand', () => {
  it('takes a single jump host', () => {
    expect(resolve('foo', 'Host foo\n  ProxyJump jump@bastion:2222\n').proxyJump).toBe(
      'jump@bastion:2222',
    );
  });

  it('takes a comma list of jump hosts as written', () => {
    expect(resolve('foo', 'Host foo\n  ProxyJump first,u@second,third:2022\n').proxyJump).toBe(
      'first,u@second,third:2022',
    );
  });

  it('takes none (any case) to mean no jump host, and none wins if it comes first', () => {
    expect(resolve('foo', 'Host foo\n  ProxyJump none\n').proxyJump).toBeNull();
    expect(resolve('foo', 'Host foo\n  ProxyJump NONE\n').proxyJump).toBeNull();
    expect(
      resolve('bastion', 'Host bastion\n  ProxyJump none\nHost *\n  ProxyJump jump\n').proxyJump,
    ).toBeNull();
    expect(
      resolve('foo', 'Host bastion\n  ProxyJump none\nHost *\n  ProxyJump jump\n').proxyJump,
    ).toBe('jump');
  });

  it('takes ProxyCommand as the rest of the line, unsplit, quotes and # included', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  ProxyCommand ssh -W "%h:%p" bastion # not a comment\n',
    );
    expect(resolved.proxyCommand).toBe('ssh -W "%h:%p" bastion # not a comment');
    expect(resolved.warnings).toEqual([]);
  });

  it('lets the first of ProxyJump and ProxyCommand win', () => {
    expect(resolve('foo', 'ProxyCommand c\nProxyJump j\n')).toMatchObject({
      proxyCommand: 'c',
      proxyJump: null,
    });
    expect(resolve('foo', 'ProxyJump j\nProxyCommand c\n')).toMatchObject({
      proxyCommand: null,
      proxyJump: 'j',
    });
    expect(resolve('foo', 'ProxyCommand none\nProxyJump j\n')).toMatchObject({
      proxyCommand: null,
      proxyJump: null,
    });
  });

  it('warns for other unsupported directives but not for their harmless values', () => {
    // ControlMaster does not matter: yonder keeps one connection per host itself.
    expect(resolve('foo', 'ControlMaster auto\n').warnings).toEqual([]);
    expect(resolve('foo', 'GSSAPIAuthentication no\n').warnings).toEqual([]);
    expect(resolve('foo', 'ForwardAgent yes\n').warnings).toEqual([
      expect.stringMatching(
        /ForwardAgent yes at .*config:1 is not supported by the ssh2 transport/,
      ),
    ]);
    expect(resolve('foo', 'HostKeyAlias Other\n')).toMatchObject({
      hostKeyAlias: 'other',
      warnings: [],
    });
    expect(resolve('foo', 'CertificateFile ~/.ssh/id-cert.pub\n').warnings).toEqual([
      expect.stringMatching(/CertificateFile .*--transport openssh/),
    ]);
    expect(resolve('foo', 'KnownHostsCommand /bin/true\n').refusals).toEqual([
      expect.stringMatching(/KnownHostsCommand .*--transport openssh/),
    ]);
  });
});

describe('authentication directives', () => {
  it('reads IdentitiesOnly yes and no, case-insensitively', () => {
    expect(resolve('foo', 'IdentitiesOnly yes\n').identitiesOnly).toBe(true);
    expect(resolve('foo', 'IdentitiesOnly YES\n').identitiesOnly).toBe(true);
    expect(resolve('foo', 'IdentitiesOnly no\n').identitiesOnly).toBe(false);
  });

  // Regression (fixed): ssh-config.ts resolveHost (line 313, and hashKnownHosts line 346) only accepts `yes`.
  // OpenSSH's flag parser also takes `true` (and `false`): `ssh -G` prints identitiesonly yes
  // and hashknownhosts yes for the config below.
  it('reads the OpenSSH flag spelling true for IdentitiesOnly and HashKnownHosts', () => {
    const resolved = resolve('foo', 'IdentitiesOnly true\nHashKnownHosts true\n');
    expect(resolved.identitiesOnly).toBe(true);
    expect(resolved.hashKnownHosts).toBe(true);
  });

  it('uses SSH_AUTH_SOCK from the env when IdentityAgent is unset or SSH_AUTH_SOCK', () => {
    const env = { SSH_AUTH_SOCK: '/run/user/agent' };
    expect(resolve('foo', '', env).identityAgent).toBe('/run/user/agent');
    expect(resolve('foo', 'IdentityAgent SSH_AUTH_SOCK\n', env).identityAgent).toBe(
      '/run/user/agent',
    );
    expect(resolve('foo', 'IdentityAgent SSH_AUTH_SOCK\n', {}).identityAgent).toBeNull();
  });

  it('takes IdentityAgent none (any case) to mean no agent', () => {
    const env = { SSH_AUTH_SOCK: '/run/user/agent' };
    expect(resolve('foo', 'IdentityAgent none\n', env).identityAgent).toBeNull();
    expect(resolve('foo', 'IdentityAgent None\n', env).identityAgent).toBeNull();
  });

  it('takes an IdentityAgent path, expanded', () => {
    const env = { SSH_AUTH_SOCK: '/run/user/agent' };
    expect(resolve('foo', 'IdentityAgent /tmp/agent.sock\n', env).identityAgent).toBe(
      '/tmp/agent.sock',
    );
    expect(resolve('foo', 'IdentityAgent ~/.agent/%n.sock\n', env).identityAgent).toBe(
      join(home, '.agent', 'foo.sock'),
    );
  });

  it('takes IdentityAgent $VAR and ${VAR} from the given env', () => {
    const env = { MY_AGENT: '/run/custom.sock', SSH_AUTH_SOCK: '/run/user/agent' };
    expect(resolve('foo', 'IdentityAgent $MY_AGENT\n', env).identityAgent).toBe('/run/custom.sock');
    expect(resolve('foo', 'IdentityAgent ${MY_AGENT}\n', env).identityAgent).toBe(
      '/run/custom.sock',
    );
    expect(resolve('foo', 'IdentityAgent $SSH_AUTH_SOCK\n', env).identityAgent).toBe(
      '/run/user/agent',
    );
  });

  it('takes IdentityAgent from the first matching block', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  IdentityAgent none\nHost *\n  IdentityAgent /tmp/agent\n',
      { SSH_AUTH_SOCK: '/x' },
    );
    expect(resolved.identityAgent).toBeNull();
  });
});

describe('keepalive, timeouts and host key policy', () => {
  it('reads ServerAliveInterval and ServerAliveCountMax', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  ServerAliveInterval 15\n  ServerAliveCountMax 5\n',
    );
    expect(resolved.serverAliveIntervalSeconds).toBe(15);
    expect(resolved.serverAliveCountMax).toBe(5);
  });

  it('reads ConnectTimeout', () => {
    expect(resolve('foo', 'ConnectTimeout 7\n').connectTimeoutSeconds).toBe(7);
  });

  it.each([
    ['yes', 'yes'],
    ['YES', 'yes'],
    ['accept-new', 'accept-new'],
    ['no', 'no'],
    ['off', 'no'],
    ['ask', 'ask'],
    ['true', 'yes'],
    ['something-odd', 'yes'],
  ])('maps StrictHostKeyChecking %s to %s', (value, expected) => {
    expect(resolve('foo', `StrictHostKeyChecking ${value}\n`).strictHostKeyChecking).toBe(expected);
  });

  // BUG (low severity, fails safe): ssh-config.ts resolveHost (lines 338-345) maps
  // `StrictHostKeyChecking false` to "yes"; OpenSSH's multistate table maps `false` to off
  // (`ssh -G` prints stricthostkeychecking false), i.e. yonder's "no".
  it('maps StrictHostKeyChecking false to no, as OpenSSH does', () => {
    expect(resolve('foo', 'StrictHostKeyChecking false\n').strictHostKeyChecking).toBe('no');
  });

  it('takes the first StrictHostKeyChecking', () => {
    const resolved = resolve(
      'foo',
      'Host foo\n  StrictHostKeyChecking accept-new\nHost *\n  StrictHostKeyChecking yes\n',
    );
    expect(resolved.strictHostKeyChecking).toBe('accept-new');
  });

  it('reads HashKnownHosts', () => {
    expect(resolve('foo', 'HashKnownHosts yes\n').hashKnownHosts).toBe(true);
    expect(resolve('foo', 'HashKnownHosts no\n').hashKnownHosts).toBe(false);
    expect(resolve('foo', '').hashKnownHosts).toBe(false);
  });
});

describe('destinations', () => {
  it('lets user@host:port override the config', () => {
    const resolved = resolve(
      'carol@foo:2345',
      'Host foo\n  HostName real.example\n  User configUser\n  Port 2222\n',
    );
    expect(resolved.alias).toBe('foo');
    expect(resolved.hostname).toBe('real.example');
    expect(resolved.user).toBe('carol');
    expect(resolved.port).toBe(2345);
  });

  it('takes only the part given: user@host keeps the config port', () => {
    const resolved = resolve('carol@foo', 'Host foo\n  User configUser\n  Port 2222\n');
    expect(resolved.user).toBe('carol');
    expect(resolved.port).toBe(2222);
  });

  it('handles [::1]:2222 and user@[::1]:2222', () => {
    const body = 'Host ::1\n  User v6\n  Port 2200\n';
    const plain = resolve('[::1]:2222', body);
    expect(plain.hostname).toBe('::1');
    expect(plain.port).toBe(2222);
    expect(plain.user).toBe('v6');
    const withUser = resolve('dave@[::1]:2222', body);
    expect(withUser.user).toBe('dave');
    expect(withUser.port).toBe(2222);
    const noPort = resolve('[::1]', body);
    expect(noPort.hostname).toBe('::1');
    expect(noPort.port).toBe(2200);
  });
});

describe('splitDestination', () => {
  it.each([
    ['host', { user: null, host: 'host', port: null }],
    ['user@host', { user: 'user', host: 'host', port: null }],
    ['host:2222', { user: null, host: 'host', port: 2222 }],
    ['user@host:2222', { user: 'user', host: 'host', port: 2222 }],
    ['[::1]:2222', { user: null, host: '::1', port: 2222 }],
    ['[::1]', { user: null, host: '::1', port: null }],
    ['user@[fe80::1]:22', { user: 'user', host: 'fe80::1', port: 22 }],
    ['::1', { user: null, host: '::1', port: null }],
    ['fe80::1:2222', { user: null, host: 'fe80::1:2222', port: null }],
    ['host:notaport', { user: null, host: 'host:notaport', port: null }],
    ['a@b@host', { user: 'a@b', host: 'host', port: null }],
    ['@host', { user: null, host: '@host', port: null }],
  ])('splits %s', (text, expected) => {
    expect(splitDestination(text)).toEqual(expected);
  });
});

describe('HostName tokens', () => {
  // Regression (fixed): ssh-config.ts resolveHost (line 252) returns HostName verbatim. OpenSSH expands %h
  // (and %%) in HostName, a common idiom (`Host *.lab` + `HostName %h.example.org`):
  // `ssh -G` gives hostname foo.example.com; yonder gives "%h.example.com".
  it('expands %h in HostName to the typed name', () => {
    const resolved = resolve('foo', 'Host foo\n  HostName %h.example.com\n');
    expect(resolved.hostname).toBe('foo.example.com');
  });
});
