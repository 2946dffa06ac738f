/** The sshd test hosts for backend-ssh's tests: their paths, their control, profiles and a manager on them. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRegistry, JobManager, type Profile } from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { SSH_HOSTS_SCRIPT, serviceCommand, sshHostsEnv } from '@yonder/test-helpers';
import { createSshBackend } from '../ssh-backend.js';
import { createSshTransport } from '../ssh-transport.js';

/** The test hosts' paths (`scripts/sshd-hosts.sh env`); fails, never skips, when they are down. */
export const hostsEnv = sshHostsEnv;

/** `bash scripts/sshd-hosts.sh COMMAND ARGS…` (kill-connections, stop-host, …). */
export function hosts(command: string, ...args: string[]): void {
  serviceCommand(SSH_HOSTS_SCRIPT, command, ...args);
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

/** A profile for a Host alias of the test ssh config, on the openssh transport (`-F` that config). */
export function opensshProfile(host: string, extra: Partial<Profile> = {}): Profile {
  const env = hostsEnv();
  return {
    name: `o-${host}`,
    backend: 'ssh',
    host,
    transport: 'openssh',
    ...extra,
    transportOptions: { config: env.YONDER_SSH_CONFIG as string, ...extra.transportOptions },
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
