import { writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { YonderError } from '@yonder/core';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveHost } from './ssh-config.js';
import { createConfigScratch, sshG } from './test-support/ssh-config-files.js';

const { freshDir, configFile, resolve, cleanup } = createConfigScratch('yonder-ssh-config-test');
const me = userInfo().username;
const home = homedir();

afterAll(cleanup);

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
