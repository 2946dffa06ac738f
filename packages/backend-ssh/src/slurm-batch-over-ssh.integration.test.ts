import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlurmBackend } from '@yonder/backend-slurm';
import { createRegistry, JobManager } from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { requireSlurm } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSshTransport } from './ssh-transport.js';
import { hostsEnv } from './test-support/hosts.js';

// Issue 24 item 24: over ssh too, a job too long for the far side's command line is refused
// alone (the far side's shell says "Argument list too long"), and the others are submitted.
let env: NodeJS.ProcessEnv;
const toCancel: string[] = [];
beforeAll(() => {
  requireSlurm();
  env = hostsEnv();
});
afterAll(() => {
  if (toCancel.length > 0) execFileSync('scancel', toCancel);
});

describe('a Slurm batch over ssh', () => {
  it('refuses only the job whose argument is past what one command line holds there', async () => {
    const state = mkdtempSync(join(tmpdir(), 'yonder-slurm-ssh-batch-'));
    const registry = createRegistry({
      backends: [createSlurmBackend()],
      transports: {
        ssh: (profile) =>
          createSshTransport({ profile, env: { ...process.env, SSH_AUTH_SOCK: '' } }),
      },
    });
    const manager = new JobManager({
      store: createFsStore({ location: state }),
      registry,
      stateDirectory: state,
      minPollIntervalMs: 0,
    });
    await manager.saveProfile({
      name: 'hpc',
      backend: 'slurm',
      host: 'target',
      ssh: { config: env.YONDER_SSH_CONFIG as string },
    });
    const specs = [0, 1, 2].map((index) => ({
      argv: ['echo', index === 1 ? 'y'.repeat(200 * 1024) : `it's $(${index})`],
      schedulerOptions: ['--hold'],
    }));
    const jobs = await manager.submitMany(specs, { profile: 'hpc' });
    for (const job of jobs) if (job.externalId) toCancel.push(job.externalId);
    expect(jobs.map((job) => job.state)).toEqual(['pending', 'failed', 'pending']);
    expect(jobs[1]).toMatchObject({
      externalId: null,
      reason: 'submit-refused',
      error: {
        code: 'E_SUBMIT_REFUSED',
        message: expect.stringMatching(
          /^the job's arguments \(201 KiB\) are too long for one command on the target \(Argument list too long\); nothing was submitted/,
        ),
      },
    });
    await manager.close();
  }, 120_000);
});
