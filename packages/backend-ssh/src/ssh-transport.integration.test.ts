import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSshTransport } from './ssh-transport.js';
import { hostsEnv, sshProfile } from './test-support/hosts.js';

let env: Record<string, string>;
let scratch: string;

beforeAll(() => {
  env = hostsEnv();
  scratch = mkdtempSync(join(tmpdir(), 'yonder-ssh-test-'));
});

function transport(
  host: string,
  extra: Parameters<typeof sshProfile>[1] = {},
  processEnv: NodeJS.ProcessEnv = { ...process.env, SSH_AUTH_SOCK: '' },
) {
  return createSshTransport({ profile: sshProfile(host, extra), env: processEnv });
}

/** An ssh config of our own, for cases the shared one does not have. */
function config(body: string): string {
  const file = join(scratch, `config-${Math.random().toString(16).slice(2)}`);
  writeFileSync(file, body);
  return file;
}

describe('SSH transport against a real sshd', () => {
  it('authenticates with a key from the ssh config and runs argv literally', async () => {
    const ssh = transport('target');
    try {
      const canary = join('/tmp', `yonder-ssh-canary-${Date.now()}`);
      const words = [
        `$(touch ${canary})`,
        `; touch ${canary}`,
        "it's",
        '"dq"',
        'new\nline',
        '-n',
        'sp ace',
        'ünï ✓',
        '*',
        '$HOME',
        '`id`',
      ];
      const result = await ssh.run(['printf', '%s\\n', ...words]);
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe(`${words.join('\n')}\n`);
      expect(existsSync(canary)).toBe(false);
      expect((await ssh.run(['id', '-un'])).stdout).toBe('yonder-test\n');
      const script = await ssh.runScript('printf "%s|" "$@"; cat', ['a b', "c'd"], {
        input: 'from stdin',
      });
      expect(script.stdout).toBe("a b|c'd|from stdin");
      const failing = await ssh.run(['sh', '-c', 'echo oops >&2; exit 3']);
      expect(failing).toMatchObject({ exitCode: 3, stderr: 'oops\n' });
    } finally {
      await ssh.close();
    }
  });

  it('shares one connection between many operations', async () => {
    const ssh = transport('target');
    // This process's connections to the host only: other processes on the machine (other test
    // runs) connect to the same sshd meanwhile.
    const connections = (): number =>
      execFileSync('ss', ['-tnp', 'state', 'established', '( dport = :2201 )'], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter((line) => line.includes(`pid=${process.pid},`)).length;
    try {
      const before = connections();
      await Promise.all(Array.from({ length: 6 }, (_, index) => ssh.run(['echo', String(index)])));
      const during = connections();
      expect(during).toBeGreaterThanOrEqual(1);
      expect(during - before).toBeLessThanOrEqual(1);
    } finally {
      await ssh.close();
    }
  });

  it('reaches the target through a ProxyJump hop', async () => {
    const ssh = transport('via-jump');
    try {
      expect((await ssh.run(['hostname'])).exitCode).toBe(0);
    } finally {
      await ssh.close();
    }
  });

  it('verifies the jump host’s key too', async () => {
    const file = config(`Host hop-unknown
  HostName 127.0.0.1
  Port 2202
  User yonder-test
  IdentityFile ${env.YONDER_SSH_KEY}
  IdentitiesOnly yes
  UserKnownHostsFile ${env.YONDER_SSH_DIR}/client/known_hosts_empty
  GlobalKnownHostsFile /dev/null
Host behind
  HostName 127.0.0.1
  Port 2201
  User yonder-test
  IdentityFile ${env.YONDER_SSH_KEY}
  IdentitiesOnly yes
  ProxyJump hop-unknown
  UserKnownHostsFile ${env.YONDER_SSH_DIR}/client/known_hosts
  GlobalKnownHostsFile /dev/null
`);
    const ssh = createSshTransport({
      profile: { name: 'x', backend: 'ssh', host: 'behind', ssh: { config: file } },
      env: { SSH_AUTH_SOCK: '' },
    });
    await expect(ssh.run(['true'])).rejects.toMatchObject({
      code: 'E_TRANSPORT',
      message: expect.stringMatching(/127\.0\.0\.1:2202.*unknown/),
    });
    await ssh.close();
  });

  it('refuses an unknown host key, saying how to trust it', async () => {
    const ssh = transport('target-unknown');
    await expect(ssh.run(['true'])).rejects.toMatchObject({
      code: 'E_TRANSPORT',
      message: expect.stringMatching(
        /unknown \(ssh-\S+ SHA256:[A-Za-z0-9+/]+\).*ssh-keyscan -p 2201 127\.0\.0\.1/,
      ),
    });
    await ssh.close();
  });

  it('refuses a changed key and a revoked key, and accepts a hashed entry', async () => {
    const changed = transport('target-changed');
    await expect(changed.run(['true'])).rejects.toMatchObject({
      message: expect.stringContaining('CHANGED'),
    });
    await changed.close();
    const revoked = transport('target-revoked');
    await expect(revoked.run(['true'])).rejects.toMatchObject({
      message: expect.stringContaining('@revoked'),
    });
    await revoked.close();
    const hashed = transport('target-hashed');
    expect((await hashed.run(['true'])).exitCode).toBe(0);
    await hashed.close();
  });

  it('with acceptNewHostKeys records a new key, and still refuses a changed one', async () => {
    const known = join(scratch, 'known_hosts_new');
    writeFileSync(known, '');
    const file = config(`Host fresh
  HostName 127.0.0.1
  Port 2201
  User yonder-test
  IdentityFile ${env.YONDER_SSH_KEY}
  IdentitiesOnly yes
  UserKnownHostsFile ${known}
  GlobalKnownHostsFile /dev/null
`);
    const ssh = createSshTransport({
      profile: {
        name: 'x',
        backend: 'ssh',
        host: 'fresh',
        ssh: { config: file, acceptNewHostKeys: true },
      },
      env: { SSH_AUTH_SOCK: '' },
    });
    expect((await ssh.run(['true'])).exitCode).toBe(0);
    await ssh.close();
    // One line, plain or hashed as the ssh config's HashKnownHosts says (Debian's says yes).
    expect(readFileSync(known, 'utf8')).toMatch(/^(\[127\.0\.0\.1\]:2201|\|1\|\S+) ssh-\S+ \S+\n$/);
    const trusted = createSshTransport({
      profile: { name: 'x', backend: 'ssh', host: 'fresh', ssh: { config: file } },
      env: { SSH_AUTH_SOCK: '' },
    });
    expect((await trusted.run(['true'])).exitCode).toBe(0);
    await trusted.close();
    copyFileSync(`${env.YONDER_SSH_DIR}/client/known_hosts_changed`, known);
    const again = createSshTransport({
      profile: {
        name: 'x',
        backend: 'ssh',
        host: 'fresh',
        ssh: { config: file, acceptNewHostKeys: true },
      },
      env: { SSH_AUTH_SOCK: '' },
    });
    await expect(again.run(['true'])).rejects.toMatchObject({
      message: expect.stringContaining('CHANGED'),
    });
    await again.close();
  });

  it('names an encrypted key it cannot use', async () => {
    const ssh = transport('target-encrypted');
    await expect(ssh.run(['true'])).rejects.toMatchObject({
      code: 'E_TRANSPORT',
      message: expect.stringContaining(`${env.YONDER_SSH_DIR}/client/id_encrypted is encrypted`),
    });
    await ssh.close();
  });

  describe('through ssh-agent', () => {
    let agent: ReturnType<typeof spawn>;
    let socket: string;
    beforeAll(async () => {
      socket = join(mkdtempSync(join(tmpdir(), 'yonder-agent-')), 'agent.sock');
      agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
      await until(() => existsSync(socket), 10_000, 'ssh-agent to listen');
      execFileSync('ssh-add', [`${env.YONDER_SSH_DIR}/client/id_agent`], {
        env: { ...process.env, SSH_AUTH_SOCK: socket },
        stdio: 'ignore',
      });
    });
    afterAll(() => {
      agent.kill();
    });

    it('authenticates with an agent key', async () => {
      const ssh = transport('target-agent', {}, { ...process.env, SSH_AUTH_SOCK: socket });
      try {
        expect((await ssh.run(['id', '-un'])).stdout).toBe('yonder-test\n');
      } finally {
        await ssh.close();
      }
    });
  });

  it('runs 20 operations at once on a host with MaxSessions 2', async () => {
    const ssh = transport('narrow');
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, index) => ssh.run(['sh', '-c', `sleep 0.2; echo ${index}`])),
      );
      expect(results.map((result) => result.stdout.trim())).toEqual(
        Array.from({ length: 20 }, (_, index) => String(index)),
      );
      // It learned to open fewer channels at once than its default of 8 (sshd frees a slot a moment
      // after a channel closes, so the exact figure it settles on can be 2 or 3).
      expect(ssh.channels.limit).toBeLessThan(8);
    } finally {
      await ssh.close();
    }
  });

  it('enforces time limits on the far side too', async () => {
    const ssh = transport('target');
    const marker = `${Date.now() % 100000}.${Math.floor(Math.random() * 1000)}`;
    try {
      await expect(ssh.run(['sleep', `3${marker}`], { timeoutMs: 1000 })).rejects.toMatchObject({
        code: 'E_TIMEOUT',
      });
      // The far side's `timeout -k 5` sends TERM at the limit and KILL 5 s later.
      await until(
        async () =>
          (await ssh.run(['sh', '-c', `pgrep -f "[s]leep 3${marker}" || true`])).stdout.trim() ===
          '',
        7_000,
        'the far side to end the command',
        250,
      );
    } finally {
      await ssh.close();
    }
  }, 20_000);
});
