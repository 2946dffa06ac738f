/** A manager on the test cluster whose profile's binDir is a set of fault-injection shims, and jobs that run until the test releases them. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobManager, JobRecord, JobSpec, Profile } from '@yonder/core';
import type { SlurmBackendSettings } from '../slurm-backend.js';
import { slurmManager, workdir } from './cluster.js';
import { createSlurmShims, type SlurmShims } from './slurm-shims.js';

/** Everything a test against shimmed Slurm commands needs. */
export interface ShimmedSlurm extends ReturnType<typeof slurmManager> {
  readonly shims: SlurmShims;
  /** The saved profile (`hpc`): its own work directory, `binDir` the shims. */
  readonly profile: Profile;
}

/** A manager (see `slurmManager`) with a saved profile `hpc` whose Slurm commands are shims. */
export async function shimmedSlurm(
  settings?: SlurmBackendSettings,
  options: Record<string, string | boolean> = {},
): Promise<ShimmedSlurm> {
  const made = slurmManager(settings);
  const shims = createSlurmShims();
  const profile: Profile = {
    name: 'hpc',
    backend: 'slurm',
    workdir: workdir(),
    options: { binDir: shims.binDir, ...options },
  };
  await made.manager.saveProfile(profile);
  return { ...made, shims, profile };
}

/** A job that runs until `release()` (or until it is cancelled). */
export interface HeldJob {
  readonly job: JobRecord;
  release(): void;
}

/** Jobs released or cancelled at the end of each test, so none keeps the node's CPUs. */
const submitted: { release(): void; externalId: string | null }[] = [];

/** Submit a job that waits for its release file, then exits 0 (or as `spec` says after it). */
export async function heldJob(manager: JobManager, spec: Partial<JobSpec> = {}): Promise<HeldJob> {
  const file = join(mkdtempSync(join(tmpdir(), 'yonder-release-')), 'go');
  const release = () => writeFileSync(file, '');
  const job = await manager.submit(
    {
      argv: ['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.2; done', 'sh', file],
      ...spec,
    },
    { profile: 'hpc' },
  );
  submitted.push({ release, externalId: job.externalId });
  return { job, release };
}

/** Release and cancel every job `heldJob` submitted (for afterEach). */
export function releaseHeldJobs(): void {
  for (const entry of submitted.splice(0)) {
    entry.release();
    if (entry.externalId) execFileSync('scancel', [entry.externalId]);
  }
}
