/** Helpers for the tests against the shared one-node Slurm: is it up, stop and start it, a manager wired to it, waiting for a condition. */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createLocalTransport,
  createRegistry,
  JobManager,
  type RunOptionsV1,
  type TransportV1,
} from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { createSlurmBackend, type SlurmBackendSettings } from '../slurm-backend.js';

export const CLUSTER_SCRIPT = new URL('../../../../scripts/slurm-cluster.sh', import.meta.url)
  .pathname;

/** Fail (never skip) when the test cluster is not up, saying how to start it. */
export function requireCluster(): void {
  const ping = spawnSync('scontrol', ['ping'], { encoding: 'utf8', timeout: 20_000 });
  if (ping.status !== 0 || !/UP/.test(ping.stdout)) {
    throw new Error(
      `The Slurm test cluster is not running (scontrol ping: ${ping.error?.message ?? ping.stdout.trim()}). Start it as root with: bash scripts/slurm-cluster.sh start`,
    );
  }
}

export function cluster(command: string): void {
  execFileSync('bash', [CLUSTER_SCRIPT, command], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, YONDER_SLURM_QUIET: '1' },
  });
}

/** A transport to this machine that counts the commands it runs. */
export function countingTransport(): TransportV1 & { commands: string[][] } {
  const inner = createLocalTransport();
  const commands: string[][] = [];
  return {
    ...inner,
    commands,
    run(argv: readonly string[], options?: RunOptionsV1) {
      commands.push([...argv]);
      return inner.run(argv, options);
    },
    runScript(script: string, args: readonly string[], options?: RunOptionsV1) {
      commands.push([...args]);
      return inner.runScript(script, args, options);
    },
  };
}

/** A manager with its own ledger, the Slurm backend (made with `settings`) and a counting local transport. */
export function slurmManager(settings?: SlurmBackendSettings): {
  manager: JobManager;
  transport: ReturnType<typeof countingTransport>;
  state: string;
} {
  const state = mkdtempSync(join(tmpdir(), 'yonder-slurm-state-'));
  const transport = countingTransport();
  const registry = createRegistry({
    backends: [createSlurmBackend(settings)],
    transports: { local: () => transport },
  });
  const manager = new JobManager({
    store: createFsStore({ location: state }),
    registry,
    stateDirectory: state,
    minPollIntervalMs: 0,
  });
  return { manager, transport, state };
}

/** A fresh, world-traversable work directory whose name has spaces and quotes. */
export function workdir(): string {
  const base = mkdtempSync(join(tmpdir(), "yonder slurm 'work' "));
  return join(base, 'jobs $(not run)');
}

/**
 * Wait until `condition` holds, asking again every `everyMs`; fail with `what` after
 * `timeoutMs`. For conditions outside yonder's control (a job's process ended, Slurm purged
 * a record), never a fixed sleep in its place.
 */
export async function until(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 60_000,
  everyMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
