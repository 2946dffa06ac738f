/**
 * A host that goes silent under the openssh transport's master (its sshd frozen: the TCP
 * connection stays up, nothing answers): with the keepalives the transport adds when the
 * config sets none, ssh ends the master, and a command sent meanwhile goes through a new
 * connection instead of waiting out its time limit.
 */
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createOpensshTransport } from './openssh-transport.js';
import { hostsEnv, opensshProfile } from './test-support/hosts.js';

// Short: a socket path in it must fit in 104 bytes.
const scratch = mkdtempSync(join(tmpdir(), 'yk-'));
const frozen: number[] = [];
afterAll(() => {
  for (const pid of frozen) {
    for (const signal of ['SIGKILL', 'SIGCONT'] as const) {
      try {
        process.kill(pid, signal);
      } catch {
        /* gone */
      }
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** The inodes of the sockets `pid` holds open. */
function socketsOf(pid: number): Set<string> {
  const found = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) found.add(match[1] as string);
    } catch {
      /* closed meanwhile */
    }
  }
  return found;
}

/** /proc/net/tcp's rows: local and remote port, and the socket's inode. */
function tcpRows(): Array<{ local: number; remote: number; inode: string }> {
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const fields = line.trim().split(/\s+/);
      const port = (address: string) => Number.parseInt(address.split(':')[1] as string, 16);
      return {
        local: port(fields[1] as string),
        remote: port(fields[2] as string),
        inode: fields[9] as string,
      };
    });
}

/** Every process holding one of `inodes` open. */
function holders(inodes: Set<string>): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return [...socketsOf(pid)].some((inode) => inodes.has(inode));
      } catch {
        return false;
      }
    });
}

/** The master: the ssh process whose title names a socket in this test's directory. */
function findMaster(): number | undefined {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .find((pid) => {
      try {
        const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        return title.startsWith('ssh: ') && title.includes(scratch);
      } catch {
        return false;
      }
    });
}

describe('the openssh transport’s keepalives', () => {
  it('end the master of a host that went silent, so the next command goes through a new one instead of waiting out its time limit', async () => {
    const env = hostsEnv();
    const client = env.YONDER_SSH_CLIENT_DIR as string;
    const port = Number(env.YONDER_SSH_PORT_TARGET);
    // The target host without the test config's own ServerAliveInterval, one keepalive missed
    // being enough (the interval is the transport's: 15 s).
    const config = join(scratch, 'config');
    writeFileSync(
      config,
      [
        'Host silent',
        '  HostName 127.0.0.1',
        `  Port ${port}`,
        `  User ${env.YONDER_SSH_USER}`,
        '  IdentitiesOnly yes',
        `  IdentityFile ${client}/id_ed25519`,
        `  UserKnownHostsFile ${client}/known_hosts`,
        '  GlobalKnownHostsFile /dev/null',
        '  StrictHostKeyChecking yes',
        '  ServerAliveCountMax 1',
        '',
      ].join('\n'),
    );
    const transport = createOpensshTransport({
      profile: opensshProfile('silent', { transportOptions: { config } }),
      env: { ...process.env, XDG_RUNTIME_DIR: scratch, SSH_AUTH_SOCK: '' },
    });
    try {
      expect((await transport.run(['echo', 'up'])).stdout.toString()).toBe('up\n');
      const master = findMaster();
      expect(master, 'the master ssh process').toBeDefined();
      const mine = socketsOf(master as number);
      const rows = tcpRows();
      const local = rows.find((row) => mine.has(row.inode) && row.remote === port)?.local;
      expect(local, 'the master’s TCP port').toBeDefined();
      const serverSide = rows.filter((row) => row.local === port && row.remote === local);
      const sshd = holders(new Set(serverSide.map((row) => row.inode)));
      expect(sshd.length, 'the sshd processes of this connection').toBeGreaterThan(0);
      for (const pid of sshd) {
        process.kill(pid, 'SIGSTOP');
        frozen.push(pid);
      }
      // Without keepalives this waits out its 120 s and fails with E_TIMEOUT. With them, ssh ends
      // the silent master; the command, which never reached the host, goes through a new one.
      const again = await transport.run(['echo', 'again'], { timeoutMs: 120_000 });
      expect(again.stdout.toString()).toBe('again\n');
      expect(findMaster(), 'a new master').not.toBe(master);
    } finally {
      await transport.close();
    }
  }, 150_000);
});
