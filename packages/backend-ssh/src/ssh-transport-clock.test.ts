/**
 * The ssh2 transport's reconnect backoff is measured on the monotonic clock (issue 24 item 1):
 * a wall clock stepped back (an NTP step, a resumed VM) after a failed connect must not hold
 * the next attempt for as long as it was stepped back.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createSshTransport } from './ssh-transport.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-ssh-clock-'));
afterAll(() => {
  vi.restoreAllMocks();
  rmSync(scratch, { recursive: true, force: true });
});

/** A loopback port nothing listens on: one a server of ours held a moment ago. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolvePromise) => server.listen(0, '127.0.0.1', resolvePromise));
  const { port } = server.address() as { port: number };
  await new Promise((resolvePromise) => server.close(resolvePromise));
  return port;
}

describe('the ssh2 transport’s backoff after a failed connect', () => {
  it('is not stretched by a wall clock stepped back an hour', async () => {
    const key = join(scratch, 'id');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
    const config = join(scratch, 'config');
    writeFileSync(
      config,
      `Host down\n  HostName 127.0.0.1\n  Port ${await closedPort()}\n  User nobody\n  IdentityFile ${key}\n`,
      { mode: 0o600 },
    );
    const transport = createSshTransport({
      profile: { name: 'down', backend: 'ssh', host: 'down', transportOptions: { config } },
    });
    try {
      await expect(transport.run(['true'], { timeoutMs: 30_000 })).rejects.toThrow(
        /Cannot connect to .*ECONNREFUSED/,
      );
      // The wall clock goes back an hour; the backoff (a quarter of a second) still ends.
      const now = Date.now.bind(Date);
      vi.spyOn(Date, 'now').mockImplementation(() => now() - 3_600_000);
      await expect(transport.run(['true'], { timeoutMs: 30_000 })).rejects.toThrow(
        /Cannot connect to .*ECONNREFUSED/,
      );
    } finally {
      vi.restoreAllMocks();
      await transport.close();
    }
  });
});
