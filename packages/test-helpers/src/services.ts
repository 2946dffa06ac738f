/**
 * The shared test services, a one-node Slurm, a one-node Grid Engine and sshd hosts on loopback, reached through the
 * repository's own scripts: is one up (fail, never skip, naming the command that starts it),
 * control it, read the sshd hosts' paths.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPOSITORY_ROOT } from './repository.js';

export const SLURM_SCRIPT = join(REPOSITORY_ROOT, 'scripts/slurm-cluster.sh');
export const SSH_HOSTS_SCRIPT = join(REPOSITORY_ROOT, 'scripts/sshd-hosts.sh');
export const GRIDENGINE_SCRIPT = join(REPOSITORY_ROOT, 'scripts/gridengine-cluster.sh');

const QUIET = { YONDER_SLURM_QUIET: '1', YONDER_SSH_QUIET: '1', YONDER_GRIDENGINE_QUIET: '1' };

/** Run `bash SCRIPT COMMAND ARGS…` (start, stop-ctld, kill-connections, …); throws if it fails. */
export function serviceCommand(script: string, command: string, ...args: string[]): void {
  execFileSync('bash', [script, command, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, ...QUIET },
    timeout: 180_000,
  });
}

/** The exit status of `bash SCRIPT status` (0: up and healthy). */
export function serviceStatus(script: string): number {
  return (
    spawnSync('bash', [script, 'status'], {
      stdio: 'ignore',
      env: { ...process.env, ...QUIET },
      timeout: 60_000,
    }).status ?? 1
  );
}

/** Fail (never skip) when the Slurm test cluster is down. */
export function requireSlurm(): void {
  if (serviceStatus(SLURM_SCRIPT) !== 0)
    throw new Error(
      'The Slurm test cluster is not running. Start it as root with: bash scripts/slurm-cluster.sh start',
    );
}

/**
 * Fail (never skip) when the Grid Engine test cluster is down. (@yonder/backend-gridengine's own
 * tests have their own copy: that package imports nothing of yonder's but the public kit.)
 */
export function requireGridEngine(): void {
  if (serviceStatus(GRIDENGINE_SCRIPT) !== 0)
    throw new Error(
      'The Grid Engine test cluster is not running. Start it as root with: bash scripts/gridengine-cluster.sh start',
    );
}

/** Fail (never skip) when the sshd test hosts are down. */
export function requireSshHosts(): void {
  if (serviceStatus(SSH_HOSTS_SCRIPT) !== 0)
    throw new Error(
      'The sshd test hosts are not running. Start them as root with: bash scripts/sshd-hosts.sh start',
    );
}

/**
 * The sshd test hosts' paths (`bash scripts/sshd-hosts.sh env`: `YONDER_SSH_CONFIG`,
 * `YONDER_SSH_DIR`, …); fails, never skips, when they are down.
 */
export function sshHostsEnv(): Record<string, string> {
  requireSshHosts();
  const text = execFileSync('bash', [SSH_HOSTS_SCRIPT, 'env'], { encoding: 'utf8' });
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^export ([A-Z_][A-Z0-9_]*)='(.*)'$/.exec(line);
    if (match) env[match[1] as string] = (match[2] as string).replaceAll("'\\''", "'");
  }
  return env;
}
