import { existsSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { splitDestination } from './ssh-config.js';
import { createConfigScratch } from './test-support/ssh-config-files.js';

const { freshDir, resolve, cleanup } = createConfigScratch('yonder-ssh-config-match-test');
const me = userInfo().username;
const home = homedir();

afterAll(cleanup);

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
