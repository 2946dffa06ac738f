/** Helpers for the tests against the shared one-node Slurm: is it up, stop and start it, a manager wired to it, waiting for a purge. */
import { execFileSync } from 'node:child_process';
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
import { requireSlurm, SLURM_SCRIPT, serviceCommand, until } from '@yonder/test-helpers';
import { createSlurmBackend, type SlurmBackendSettings } from '../slurm-backend.js';

/** Fail (never skip) when the test cluster is not up, saying how to start it. */
export const requireCluster = requireSlurm;

/** `bash scripts/slurm-cluster.sh COMMAND` (stop-ctld, start-ctld, …). */
export function cluster(command: string): void {
  serviceCommand(SLURM_SCRIPT, command);
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

/** Wait until Slurm has purged a job from squeue (MinJobAge, checked every 2 s). */
export function untilPurged(externalId: string, timeoutMs: number): Promise<void> {
  return until(
    () =>
      !execFileSync('squeue', ['--noheader', '--states=all', '--format=%A'], { encoding: 'utf8' })
        .split('\n')
        .includes(externalId),
    timeoutMs,
    `job ${externalId} to be purged from squeue`,
    2_000,
  );
}
