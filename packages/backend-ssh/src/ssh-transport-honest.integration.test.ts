import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '@yonder/test-helpers';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSshTransport, type SshTransport } from './ssh-transport.js';
import { hostsEnv, sshProfile } from './test-support/hosts.js';

let env: Record<string, string>;
let scratch: string;

beforeAll(() => {
  env = hostsEnv();
  scratch = mkdtempSync(join(tmpdir(), 'yonder-ssh2-honest-'));
});

function transport(host: string, warnings: string[] = [], settings: Record<string, unknown> = {}) {
  return createSshTransport({
    profile: sshProfile(host, { ssh: { config: env.YONDER_SSH_CONFIG as string, ...settings } }),
    env: { SSH_AUTH_SOCK: '' },
    warn: (message) => warnings.push(message),
  });
}

/** An ssh config of our own that includes the test hosts' config after its own lines. */
function config(body: string): string {
  const file = join(scratch, `config-${Math.random().toString(16).slice(2)}`);
  writeFileSync(file, `${body}\nInclude ${env.YONDER_SSH_CONFIG}\n`);
  return file;
}

function own(host: string, file: string, settings: Record<string, unknown> = {}): SshTransport {
  return createSshTransport({
    profile: { name: 'x', backend: 'ssh', host, transportOptions: { config: file, ...settings } },
    env: { SSH_AUTH_SOCK: '' },
    warn: () => {},
  });
}

async function using<T>(ssh: SshTransport, body: (ssh: SshTransport) => Promise<T>): Promise<T> {
  try {
    return await body(ssh);
  } finally {
    await ssh.close();
  }
}

describe('ssh2 transport: routes', () => {
  it('runs over a ProxyCommand (tokens expanded) to a host whose name does not resolve, its key under the HostKeyAlias', async () => {
    // The ProxyCommands this process runs (`ssh … -W 127.0.0.1:2201 jump` once exec'd).
    const proxies = (): string[] =>
      execFileSync('ps', ['--ppid', String(process.pid), '-o', 'args='], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(' -W 127.0.0.1:'));
    await using(transport('inner'), async (ssh) => {
      const result = await ssh.run(['id', '-un']);
      expect(result).toMatchObject({ exitCode: 0, stdout: 'yonder-test\n' });
      // One SSH login of ours: the ProxyCommand's own ssh to the jump host is not counted.
      expect(ssh.handshakes).toBe(1);
      const described = await ssh.describe();
      expect(described.facts.route).toEqual([
        expect.objectContaining({
          hostname: 'inner.yonder.invalid',
          hostKeyAlias: 'inner.yonder.test',
          via: expect.stringMatching(/^ProxyCommand sh -c/),
        }),
      ]);
      expect(proxies()).toHaveLength(1);
    });
    // Closing the transport ends its ProxyCommand.
    await until(() => proxies().length === 0, 10_000, 'the ProxyCommand to end');
  });

  it('refuses a ProxyCommand token that would hand shell code to the shell, and runs nothing', async () => {
    const canary = join(scratch, `canary-${Date.now()}`);
    const file = config(
      `Host *\n  IdentityFile ${env.YONDER_SSH_KEY}\n  ProxyCommand sh -c 'exit 1' proxy %n\n`,
    );
    const ssh = own(`$(touch ${canary})`, file);
    await expect(ssh.run(['true'])).rejects.toMatchObject({
      code: 'E_INVALID_PROFILE',
      message: expect.stringContaining('shell characters'),
    });
    await ssh.close();
    expect(existsSync(canary)).toBe(false);
  });

  it('says what a ProxyCommand printed when it fails', async () => {
    const file = config(
      `Host broken\n  HostName nowhere.invalid\n  IdentityFile ${env.YONDER_SSH_KEY}\n  ProxyCommand sh -c 'echo "proxy says no" >&2; exit 3'\n`,
    );
    await using(own('broken', file), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringMatching(/ProxyCommand exited with 3: proxy says no/),
      });
    });
  });

  it('follows a jump host’s own ProxyJump (target -> jump-chained -> target)', async () => {
    await using(transport('via-chain'), async (ssh) => {
      expect((await ssh.run(['true'])).exitCode).toBe(0);
      expect(ssh.handshakes).toBe(3);
      const described = await ssh.describe();
      expect(
        (described.facts.route as Array<{ destination: string; port: number }>).map(
          (hop) => `${hop.destination}:${hop.port}`,
        ),
      ).toEqual(['target:2201', 'jump-chained:2202', 'via-chain:2201']);
    });
  });

  it('follows a ProxyJump list, first host first', async () => {
    await using(transport('via-list'), async (ssh) => {
      expect((await ssh.run(['true'])).exitCode).toBe(0);
      expect(ssh.handshakes).toBe(3);
    });
  });
});

describe('ssh2 transport: the ssh config as ssh -F reads it', () => {
  it('fails on a --ssh-config file that does not exist, naming it', async () => {
    const missing = join(scratch, 'no such config');
    await using(own('target', missing), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringContaining(missing),
      });
    });
  });

  it('takes IdentityFile none as no file, and a later IdentityFile as the key', async () => {
    const plain = (identities: string): string => {
      const file = join(scratch, `plain-${Math.random().toString(16).slice(2)}`);
      writeFileSync(
        file,
        `Host target\n  HostName 127.0.0.1\n  Port 2201\n  User yonder-test\n${identities}  UserKnownHostsFile ${env.YONDER_SSH_KNOWN_HOSTS}\n  GlobalKnownHostsFile /dev/null\n`,
      );
      return file;
    };
    await using(
      own('target', plain('  IdentityFile none\n  IdentitiesOnly yes\n')),
      async (ssh) => {
        await expect(ssh.run(['true'])).rejects.toMatchObject({
          message: expect.stringMatching(/^No way to authenticate .*no identity file exists/),
        });
      },
    );
    const then = plain(`  IdentityFile none\n  IdentityFile ${env.YONDER_SSH_KEY}\n`);
    await using(own('target', then), async (ssh) => {
      expect((await ssh.run(['true'])).exitCode).toBe(0);
    });
  });

  it('reports what it ignores once, and refuses Match exec before connecting', async () => {
    const warnings: string[] = [];
    const file = config('Host target\n  ForwardAgent yes\n  Compression yes\n');
    const ssh = createSshTransport({
      profile: { name: 'x', backend: 'ssh', host: 'target', transportOptions: { config: file } },
      env: { SSH_AUTH_SOCK: '' },
      warn: (message) => warnings.push(message),
    });
    await using(ssh, async () => {
      await ssh.run(['true']);
      ssh.disconnect();
      await ssh.run(['true']);
      expect(warnings).toEqual([
        expect.stringMatching(/ForwardAgent yes at .*:2 is not supported by the ssh2 transport/),
      ]);
      expect((await ssh.describe()).warnings).toEqual(warnings);
    });
    const canary = join(scratch, `exec-canary-${Date.now()}`);
    const exec = config(`Match exec "touch ${canary}"\n  User someone-else\n`);
    await using(own('target', exec), async (refused) => {
      await expect(refused.run(['true'])).rejects.toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringMatching(/Match exec .* cannot be evaluated .*--transport openssh/),
      });
      expect((await refused.describe()).problems).toEqual([expect.stringContaining('Match exec')]);
    });
    expect(existsSync(canary)).toBe(false);
  });
});

describe('ssh2 transport: logins it cannot make are refused clearly', () => {
  it('names the second factor a server asks for after the key', async () => {
    await using(transport('second'), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringMatching(
          /accepted the key but asks for more \(keyboard-interactive.*\).*--transport openssh/,
        ),
      });
    });
  });

  it('names the methods of a server that takes no public keys', async () => {
    await using(transport('passwd'), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        message: expect.stringMatching(
          /does not take public keys here; it offers password.*--transport openssh/,
        ),
      });
    });
  });

  it('logs in with an RSA key where the server takes only rsa-sha2-512', async () => {
    await using(transport('rsa512'), async (ssh) => {
      expect((await ssh.run(['id', '-un'])).stdout).toBe('yonder-test\n');
    });
  });

  it('logs in with an RSA key from the agent where the server takes only rsa-sha2-512', async () => {
    const socket = join(mkdtempSync(join(tmpdir(), 'yonder-agent-')), 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
    try {
      await until(() => existsSync(socket), 10_000, 'ssh-agent to listen');
      execFileSync('ssh-add', [env.YONDER_SSH_KEY_RSA as string], {
        env: { ...process.env, SSH_AUTH_SOCK: socket },
        stdio: 'ignore',
      });
      // No identity file at all: only the agent's key can log in.
      const file = join(scratch, 'agent-only');
      writeFileSync(
        file,
        `Host rsa512\n  HostName 127.0.0.1\n  Port 2233\n  User yonder-test\n  IdentityFile none\n  IdentityAgent ${socket}\n  UserKnownHostsFile ${env.YONDER_SSH_KNOWN_HOSTS}\n`,
      );
      const ssh = createSshTransport({
        profile: { name: 'x', backend: 'ssh', host: 'rsa512', transportOptions: { config: file } },
        env: {},
        warn: () => {},
      });
      await using(ssh, async () => {
        expect((await ssh.run(['id', '-un'])).stdout).toBe('yonder-test\n');
      });
    } finally {
      agent.kill();
    }
  });
});

describe('ssh2 transport: OpenSSH user certificates', () => {
  it('names the certificate beside the key, which ssh logs in with', async () => {
    await using(transport('userca'), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringMatching(
          /id_cert-cert\.pub, which ssh2 cannot use: use --transport openssh/,
        ),
      });
    });
    expect(
      execFileSync('ssh', ['-F', env.YONDER_SSH_CONFIG as string, 'userca', 'echo', 'ok'], {
        encoding: 'utf8',
      }).trim(),
    ).toBe('ok');
  });

  it('names a CertificateFile, and warns of it', async () => {
    const certificate = join(scratch, 'elsewhere-cert.pub');
    copyFileSync(`${env.YONDER_SSH_KEY_CERT}-cert.pub`, certificate);
    const warnings: string[] = [];
    const ssh = createSshTransport({
      profile: {
        name: 'x',
        backend: 'ssh',
        host: 'userca',
        transportOptions: { config: config(`Host userca\n  CertificateFile ${certificate}\n`) },
      },
      env: { SSH_AUTH_SOCK: '' },
      warn: (message) => warnings.push(message),
    });
    await using(ssh, async () => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        message: expect.stringContaining(`${certificate}, `),
      });
      expect(warnings).toEqual([expect.stringMatching(/CertificateFile .*--transport openssh/)]);
    });
  });

  it('names a certificate in the agent', async () => {
    const socket = join(mkdtempSync(join(tmpdir(), 'yonder-agent-')), 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
    try {
      await until(() => existsSync(socket), 10_000, 'ssh-agent to listen');
      // ssh-add adds the certificate beside the key too.
      execFileSync('ssh-add', [env.YONDER_SSH_KEY_CERT as string], {
        env: { ...process.env, SSH_AUTH_SOCK: socket },
        stdio: 'ignore',
      });
      const file = join(scratch, 'agent-cert');
      writeFileSync(
        file,
        `Host userca\n  HostName 127.0.0.1\n  Port 2235\n  User yonder-test\n  IdentityFile none\n  IdentityAgent ${socket}\n  UserKnownHostsFile ${env.YONDER_SSH_KNOWN_HOSTS}\n`,
      );
      await using(own('userca', file), async (ssh) => {
        await expect(ssh.run(['true'])).rejects.toMatchObject({
          message: expect.stringMatching(
            /in the agent: \S+ \(ssh-ed25519-cert-v01@openssh\.com\), which ssh2 cannot use/,
          ),
        });
      });
    } finally {
      agent.kill();
    }
  });
});

describe('ssh2 transport: HostKeyAlias', () => {
  it('records a new key under the alias (no port), and checks it there next time', async () => {
    const known = join(scratch, 'known_hosts_alias_new');
    writeFileSync(known, '');
    const file = join(scratch, 'alias-config');
    writeFileSync(
      file,
      `Host aliased\n  HostName 127.0.0.1\n  Port 2201\n  User yonder-test\n  HostKeyAlias Box.Alias\n  IdentityFile ${env.YONDER_SSH_KEY}\n  UserKnownHostsFile ${known}\n  GlobalKnownHostsFile /dev/null\n`,
    );
    await using(own('aliased', file, { acceptNewHostKeys: true }), async (ssh) => {
      expect((await ssh.run(['true'])).exitCode).toBe(0);
    });
    expect(readFileSync(known, 'utf8')).toMatch(/^box\.alias ssh-\S+ \S+\n$/);
    await using(own('aliased', file), async (ssh) => {
      expect((await ssh.run(['true'])).exitCode).toBe(0);
    });
    // The same key recorded for another name only is unknown under the alias.
    writeFileSync(known, readFileSync(known, 'utf8').replace('box.alias', '[127.0.0.1]:2201'));
    await using(own('aliased', file), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        message: expect.stringMatching(/\(known as box\.alias\) is unknown/),
      });
    });
  });
});

describe('ssh2 transport: host keys vouched for by a certificate authority', () => {
  it('refuses a host covered by @cert-authority, and never pins its raw key', async () => {
    const known = join(scratch, 'known_hosts_ca');
    copyFileSync(env.YONDER_SSH_KNOWN_HOSTS_CA as string, known);
    const before = readFileSync(known, 'utf8');
    const file = config(`Host hostca\n  UserKnownHostsFile ${known}\n`);
    await using(own('hostca', file, { acceptNewHostKeys: true }), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringMatching(
          /@cert-authority in .*known_hosts_ca:1.*--transport openssh/,
        ),
      });
    });
    expect(readFileSync(known, 'utf8')).toBe(before);
    // What the system ssh does with the same file: it verifies the certificate.
    expect(
      execFileSync('ssh', ['-F', file, 'hostca', 'echo', 'ok'], { encoding: 'utf8' }).trim(),
    ).toBe('ok');
  });

  it('refuses it with the CA revoked too', async () => {
    const file = config(
      `Host hostca\n  UserKnownHostsFile ${env.YONDER_SSH_KNOWN_HOSTS_CA_REVOKED}\n`,
    );
    await using(own('hostca', file, { acceptNewHostKeys: true }), async (ssh) => {
      await expect(ssh.run(['true'])).rejects.toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringContaining('@cert-authority'),
      });
    });
  });
});
