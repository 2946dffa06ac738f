/**
 * The openssh transport against hosts as locked-down sites run them (issue 24 items 22 and 23):
 * a server's MaxSessions is kept to on the one master connection, never by new logins; a
 * host that does not answer is said so at the connect time limit, not at the command's; a
 * server's Banner stays out of the messages; a port written into the host name is refused.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createOpensshTransport } from './openssh-transport.js';
import { hostsEnv, opensshProfile } from './test-support/hosts.js';

// Short: a socket path in it must fit in 104 bytes.
const scratch = mkdtempSync('/tmp/yl-');
const env = { ...process.env, XDG_RUNTIME_DIR: scratch, SSH_AUTH_SOCK: '' };
const stops: Array<() => void> = [];
afterAll(() => {
  for (const stop of stops.reverse()) stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** The logins a test host's sshd accepted so far, from its log. */
function logins(log: string): number {
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.includes('Accepted publickey for')).length;
}

/** A port on loopback nothing else uses: one a server of ours listened on a moment ago. */
async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolvePromise) => server.listen(0, '127.0.0.1', resolvePromise));
  stops.push(() => server.close());
  return (server.address() as { port: number }).port;
}

function configFile(name: string, text: string): string {
  const file = join(scratch, name);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

describe('a host with MaxSessions 2, through the openssh transport', () => {
  it('runs 20 commands at once over the one master: no new login when the server refuses a session', async () => {
    const hosts = hostsEnv();
    const log = hosts.YONDER_SSH_LOG_NARROW as string;
    const transport = createOpensshTransport({
      profile: opensshProfile('narrow', { transportOptions: { controlPersistSeconds: 30 } }),
      env,
    });
    try {
      const before = logins(log);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          transport.run(['sh', '-c', `sleep 0.3; echo ${index}`]),
        ),
      );
      expect(results.map((result) => result.stdout)).toEqual(
        Array.from({ length: 20 }, (_, index) => `${index}\n`),
      );
      // Only the master logged in: every refused session waited for one on it.
      expect(logins(log) - before).toBe(1);
    } finally {
      await transport.logout();
      await transport.close();
    }
  }, 120_000);
});

describe('a host that does not answer', () => {
  it('fails at the connect time limit (20 s, as ssh2), named so, not at the command’s', async () => {
    const sockets: Array<{ destroy(): void }> = [];
    const port = await listening(createServer((socket) => sockets.push(socket)));
    stops.push(() => {
      for (const socket of sockets) socket.destroy();
    });
    const config = configFile('silent', `Host silent\n  HostName 127.0.0.1\n  Port ${port}\n`);
    const transport = createOpensshTransport({
      profile: opensshProfile('silent', { transportOptions: { config } }),
      env,
    });
    try {
      const error = await transport.run(['true'], { timeoutMs: 300_000 }).then(
        () => null,
        (caught: unknown) => caught as { code: string; message: string },
      );
      expect(error?.code).toBe('E_TRANSPORT');
      expect(error?.message).toContain('timed out during banner exchange');
    } finally {
      await transport.close();
    }
  }, 120_000);
});

describe('a server with a Banner', () => {
  it('keeps the banner out of the error of a login it refused', async () => {
    const dir = mkdtempSync(join(scratch, 'b'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host')]);
    const banner = configFile('banner.txt', 'WELCOME TO THE CLUSTER\nUse is monitored.\n');
    // A port free a moment ago: sshd takes it (it says so, or exits and the test says why).
    const probe = createServer();
    const port = await listening(probe);
    await new Promise((resolvePromise) => probe.close(resolvePromise));
    const sshd: ChildProcess = spawn(
      '/usr/sbin/sshd',
      [
        '-D',
        '-e',
        '-f',
        '/dev/null',
        '-h',
        join(dir, 'host'),
        '-p',
        String(port),
        '-o',
        'ListenAddress=127.0.0.1',
        '-o',
        `Banner=${banner}`,
        '-o',
        'PidFile=none',
        '-o',
        'AuthorizedKeysFile=none',
        '-o',
        'KbdInteractiveAuthentication=no',
        '-o',
        'PasswordAuthentication=no',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let said = '';
    sshd.stderr?.on('data', (chunk: Buffer) => {
      said += chunk.toString();
    });
    stops.push(() => sshd.kill('SIGTERM'));
    await new Promise<void>((resolvePromise, rejectPromise) => {
      const poll = (): void => {
        if (said.includes('Server listening')) resolvePromise();
        else if (sshd.exitCode !== null) rejectPromise(new Error(`sshd exited: ${said}`));
        else setTimeout(poll, 50);
      };
      poll();
    });
    const config = configFile(
      'bannered',
      [
        'Host bannered',
        '  HostName 127.0.0.1',
        `  Port ${port}`,
        '  User nobody',
        '  StrictHostKeyChecking no',
        '  UserKnownHostsFile /dev/null',
        `  IdentityFile ${hostsEnv().YONDER_SSH_KEY}`,
        '  IdentitiesOnly yes',
        '',
      ].join('\n'),
    );
    const transport = createOpensshTransport({
      profile: opensshProfile('bannered', { transportOptions: { config } }),
      env,
    });
    try {
      const error = await transport.run(['true']).then(
        () => null,
        (caught: unknown) => caught as { code: string; message: string },
      );
      expect(error?.code).toBe('E_LOGIN_REQUIRED');
      expect(error?.message).toContain('Permission denied (publickey)');
      expect(error?.message).not.toContain('WELCOME');
      expect(error?.message).not.toContain('monitored');
    } finally {
      await transport.close();
    }
  }, 120_000);
});

describe('a port written into the host name', () => {
  it('is refused, naming the ways that work', () => {
    for (const [host, destination] of [
      ['box:2222', 'box'],
      ['me@box:2222', 'me@box'],
    ] as const) {
      expect(() => createOpensshTransport({ profile: opensshProfile(host), env })).toThrow(
        `the host "${host}" names a port, which the system ssh (--transport openssh) does not read from a host name. Fix: give the port in your ssh config (Host box, then Port 2222) and --host ${destination}, or use --transport ssh2, which reads it there.`,
      );
    }
    // An IPv6 address is not a port.
    expect(() => createOpensshTransport({ profile: opensshProfile('::1'), env })).not.toThrow();
  });
});
