import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRegistry, JobManager, type Profile } from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { createSshBackend } from '../ssh-backend.js';
import { createSshTransport } from '../ssh-transport.js';

export const HOSTS_SCRIPT = new URL('../../../../scripts/sshd-hosts.sh', import.meta.url).pathname;

/** The test hosts' paths (`scripts/sshd-hosts.sh env`); fails, never skips, when they are down. */
export function hostsEnv(): Record<string, string> {
  try {
    execFileSync('bash', [HOSTS_SCRIPT, 'status'], {
      stdio: 'ignore',
      env: { ...process.env, YONDER_SSH_QUIET: '1' },
    });
  } catch {
    throw new Error(
      'The sshd test hosts are not running. Start them as root with: bash scripts/sshd-hosts.sh start',
    );
  }
  const text = execFileSync('bash', [HOSTS_SCRIPT, 'env'], { encoding: 'utf8' });
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^export ([A-Z_][A-Z0-9_]*)='(.*)'$/.exec(line);
    if (match) env[match[1] as string] = (match[2] as string).replaceAll("'\\''", "'");
  }
  return env;
}

export function hosts(command: string, ...args: string[]): void {
  execFileSync('bash', [HOSTS_SCRIPT, command, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, YONDER_SSH_QUIET: '1' },
  });
}

/** A profile for a Host alias of the test ssh config. */
export function sshProfile(host: string, extra: Partial<Profile> = {}): Profile {
  const env = hostsEnv();
  return {
    name: `p-${host}`,
    backend: 'ssh',
    host,
    ...extra,
    ssh: { config: env.YONDER_SSH_CONFIG as string, ...extra.ssh },
  };
}

/** A manager with its own ledger and the ssh backend and transport. */
export function sshManager(): { manager: JobManager; state: string } {
  const state = mkdtempSync(join(tmpdir(), 'yonder-ssh-state-'));
  const registry = createRegistry({
    backends: [createSshBackend()],
    transports: { ssh: (profile) => createSshTransport({ profile }) },
  });
  return {
    manager: new JobManager({
      store: createFsStore({ location: state }),
      registry,
      stateDirectory: state,
      minPollIntervalMs: 0,
    }),
    state,
  };
}
