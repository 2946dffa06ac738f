import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certAuthorityFor, parseKnownHosts } from './known-hosts.js';
import { expandProxyCommand } from './proxy-command.js';
import { authenticationFailure } from './ssh-authentication.js';
import { resolveHost } from './ssh-config.js';
import { SYSTEM_CONFIG } from './ssh-config-values.js';
import { planRoute } from './ssh-route.js';

let scratch: string;
let counter = 0;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-ssh-route-'));
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function file(body: string): string {
  counter += 1;
  const path = join(scratch, `config-${counter}`);
  writeFileSync(path, body);
  return path;
}

const hops = (destination: string, body: string): string[] =>
  planRoute(destination, { configFile: file(body), env: {} }).map(
    (host) => `${host.user}@${host.hostname}:${host.port}`,
  );

describe('planRoute', () => {
  it('goes through a jump host’s own ProxyJump first', () => {
    const body =
      'Host j1\n  HostName one\nHost j2\n  HostName two\n  ProxyJump j1\nHost t\n  HostName tee\n  User me\n  ProxyJump j2\n';
    expect(hops('t', body)).toEqual([
      expect.stringMatching(/@one:22$/),
      expect.stringMatching(/@two:22$/),
      'me@tee:22',
    ]);
  });

  it('treats ProxyJump a,b as ssh does: b through -J a, its own ProxyJump ignored; a with its own', () => {
    const body = [
      'Host a',
      '  HostName aa',
      '  ProxyJump z',
      'Host b',
      '  HostName bb',
      '  ProxyJump ignored-because-of-J',
      '  ProxyCommand ignored too',
      'Host z',
      '  HostName zz',
      'Host t',
      '  ProxyJump a,jumper@b:2022',
      '',
    ].join('\n');
    expect(hops('t', body)).toEqual([
      expect.stringMatching(/@zz:22$/),
      expect.stringMatching(/@aa:22$/),
      'jumper@bb:2022',
      expect.stringMatching(/@t:22$/),
    ]);
  });

  it('stops a ProxyJump loop', () => {
    expect(() => hops('a', 'Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n')).toThrow(
      /ProxyJump hops: a loop/,
    );
    expect(() => hops('a', 'Host a\n  HostName a\n  ProxyJump a\n')).toThrow(/loop via a/);
  });
});

describe('ProxyCommand tokens', () => {
  const host = (proxyCommand: string, alias = 'alias', extra = {}) => ({
    ...resolveHost(alias, {
      configFile: file(`Host ${alias}\n  HostName real.example\n  User u\n  Port 2022\n`),
      env: {},
    }),
    proxyCommand,
    ...extra,
  });

  it('expands %h %p %r %n %k %% as ssh does, with exec in front', () => {
    expect(expandProxyCommand(host('nc %h %p # %r %n %k %%'))).toBe(
      'exec nc real.example 2022 # u alias alias %',
    );
    expect(expandProxyCommand(host('x %k', 'alias', { hostKeyAlias: 'kept' }))).toBe('exec x kept');
  });

  it('refuses an unknown token and a value with shell characters', () => {
    expect(() => expandProxyCommand(host('nc %z'))).toThrow(/unknown token %z/);
    for (const bad of ['$(id)', 'a;b', 'a b', '`x`', '-oProxyCommand=x', "it's"])
      expect(() => expandProxyCommand(host('nc %n', 'alias', { alias: bad })), bad).toThrow(
        /shell characters/,
      );
  });
});

describe('--ssh-config is ssh -F', () => {
  it('does not read /etc/ssh/ssh_config, which the default resolution does', () => {
    const system = readFileSync(SYSTEM_CONFIG, 'utf8');
    // Debian's system config says HashKnownHosts yes; a config of ours that says nothing does not.
    expect(system).toMatch(/^\s*HashKnownHosts yes/m);
    const ours = file('Host x\n  Port 2022\n');
    expect(resolveHost('x', { configFile: ours, env: {} }).hashKnownHosts).toBe(false);
    expect(resolveHost('x', { configFiles: [ours, SYSTEM_CONFIG], env: {} }).hashKnownHosts).toBe(
      true,
    );
  });

  it('fails on a missing file, naming it; `none` reads nothing', () => {
    const missing = join(scratch, 'does-not-exist');
    expect(() => resolveHost('x', { configFile: missing })).toThrow(
      expect.objectContaining({ code: 'E_TRANSPORT', message: expect.stringContaining(missing) }),
    );
    expect(resolveHost('x', { configFile: 'none', env: {} }).hashKnownHosts).toBe(false);
  });
});

describe('known_hosts @cert-authority', () => {
  const ca = 'AAAAC3NzaC1lZDI1NTE5AAAAIGs2z7vJ3H3T0fYl0w2m7u6a8b1c2d3e4f5g6h7i8j9k';
  it('finds the CA line for a host, by [host]:port or pattern, and none for others', () => {
    const entries = parseKnownHosts(
      `@cert-authority *.corp,[10.0.0.1]:2022 ssh-ed25519 ${ca}\n`,
      'kh',
    );
    expect(entries).toHaveLength(1);
    expect(certAuthorityFor(entries, 'db.corp', 22)?.line).toBe(1);
    expect(certAuthorityFor(entries, '10.0.0.1', 2022)?.line).toBe(1);
    expect(certAuthorityFor(entries, '10.0.0.1', 22)).toBeUndefined();
    expect(certAuthorityFor(entries, 'other', 22)).toBeUndefined();
  });
});

describe('authentication failures', () => {
  const identities = { keys: [], problems: [], certificates: [], agent: undefined };
  it('names a second factor after a partial success', () => {
    expect(
      authenticationFailure('u@h:22', identities, {
        methodsLeft: ['keyboard-interactive'],
        partialSuccess: true,
      }),
    ).toMatch(/accepted the key but asks for more \(keyboard-interactive.*--transport openssh/);
  });

  it('names what the server offers instead of keys, and certificates ssh2 cannot offer', () => {
    const text = authenticationFailure(
      'u@h:22',
      { ...identities, certificates: ['/k-cert.pub'] },
      { methodsLeft: ['gssapi-with-mic', 'password'], partialSuccess: false },
    );
    expect(text).toMatch(
      /does not take public keys here; it offers gssapi-with-mic \(Kerberos\), password/,
    );
    expect(text).toMatch(/certificate \/k-cert\.pub, which ssh2 cannot use/);
  });
});

describe('StrictHostKeyChecking', () => {
  it('is reported when the config would let ssh accept keys the ssh2 transport refuses', () => {
    const review = (value: string) =>
      resolveHost('x', { configFile: file(`StrictHostKeyChecking ${value}\n`), env: {} }).warnings;
    expect(review('yes')).toEqual([]);
    expect(review('ask')).toEqual([]);
    expect(review('accept-new')).toEqual([
      expect.stringMatching(/StrictHostKeyChecking accept-new .*acceptNewHostKeys option/),
    ]);
    expect(review('no')).toHaveLength(1);
  });
});
