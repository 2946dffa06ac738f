import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlurmBackend } from '@yonder/backend-slurm';
import { createRegistry, JobManager } from '@yonder/core';
import { backendConformance } from '@yonder/core/conformance';
import { createFsStore } from '@yonder/store-fs';
import { until, untilJobGone } from '@yonder/test-helpers';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSshBackend } from './ssh-backend.js';
import { createSshTransport } from './ssh-transport.js';
import { hostsEnv, sshManager, sshProfile } from './test-support/hosts.js';

let env: Record<string, string>;
beforeAll(() => {
  env = hostsEnv();
});

const conformanceEnv = (() => {
  try {
    return hostsEnv();
  } catch {
    return { YONDER_SSH_CONFIG: '/nonexistent' };
  }
})();

backendConformance(it, () => createSshBackend(), {
  profile: {
    name: 'box',
    backend: 'ssh',
    host: 'target',
    ssh: { config: conformanceEnv.YONDER_SSH_CONFIG as string },
  },
  createTransport: (profile) =>
    createSshTransport({ profile, env: { ...process.env, SSH_AUTH_SOCK: '' } }),
  jobTimeoutMs: 30_000,
});

describe('ssh backend against a real sshd', () => {
  it('a job survives the death of the yonder process and its connection', async () => {
    const { manager, state } = sshManager();
    await manager.saveProfile({ ...sshProfile('target'), name: 'box' });
    // Another node process submits, then exits at once: its SSH connection goes with it.
    const script = join(mkdtempSync(join(tmpdir(), 'yonder-ssh-submit-')), 'submit.mjs');
    const dist = (name: string) => new URL(`../../${name}/dist/index.js`, import.meta.url).pathname;
    writeFileSync(
      script,
      `import { createRegistry, JobManager } from ${JSON.stringify(dist('core'))};
import { createFsStore } from ${JSON.stringify(dist('store-fs'))};
import { createSshBackend, createSshTransport } from ${JSON.stringify(dist('backend-ssh'))};
const registry = createRegistry({ backends: [createSshBackend()], transports: { ssh: (profile) => createSshTransport({ profile }) } });
const manager = new JobManager({ store: createFsStore({ location: ${JSON.stringify(state)} }), registry, stateDirectory: ${JSON.stringify(state)} });
const job = await manager.submit({ argv: ['sh', '-c', 'sleep 3; echo survived'] }, { profile: 'box' });
process.stdout.write(job.id);
process.exit(0);`,
    );
    const child = spawnSync(process.execPath, [script], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, SSH_AUTH_SOCK: '' },
    });
    expect(child.status, child.stderr).toBe(0);
    const id = child.stdout.trim();
    const { jobs } = await manager.wait([id], { timeoutMs: 30_000 });
    expect(jobs[0]).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect((await manager.logs(id)).chunk.data.toString()).toBe('survived\n');
    await manager.close();
  }, 60_000);

  it('cancels by process group, and a job killed from outside reports its exit status, naming the signal only as a possibility', async () => {
    const { manager } = sshManager();
    await manager.saveProfile({ ...sshProfile('target'), name: 'box', cancelGraceSeconds: 1 });
    const stubborn = await manager.submit(
      { argv: ['sh', '-c', 'trap "" TERM; echo ready; while :; do sleep 1; done'] },
      { profile: 'box' },
    );
    await until(
      async () => (await manager.logs(stubborn.id)).chunk.data.toString().includes('ready'),
      10_000,
      'the job to trap TERM',
      100,
    );
    const [cancelled] = await manager.cancel([stubborn.id], { waitMs: 20_000 });
    expect(cancelled?.state).toBe('cancelled');
    // The host is this machine: the job's processes there are gone, not only its record.
    await untilJobGone(Number(stubborn.data.pid));
    const killed = await manager.submit({ argv: ['sh', '-c', 'kill -9 $$'] }, { profile: 'box' });
    const { jobs } = await manager.wait([killed.id], { timeoutMs: 20_000 });
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      exitCode: 137,
      signal: null,
      reason: 'exit code 137 (or killed by SIGKILL)',
    });
    await manager.close();
  }, 60_000);

  it('runs Slurm over SSH end to end', async () => {
    const state = mkdtempSync(join(tmpdir(), 'yonder-slurm-ssh-'));
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
    const check = await manager.checkProfile('hpc');
    expect(check.probe).toMatchObject({
      ok: true,
      facts: { home: '/home/yonder-test', accounting: true },
    });
    const job = await manager.submit(
      {
        argv: ['sh', '-c', 'echo "on $(id -un): $1"; exit 6', 'sh', "a 'quoted' $(arg)"],
        name: 'over ssh',
      },
      { profile: 'hpc' },
    );
    const { jobs } = await manager.wait([job.id], { timeoutMs: 90_000 });
    expect(jobs[0]).toMatchObject({ state: 'failed', exitCode: 6, backend: 'slurm' });
    expect(String(jobs[0]?.data.jobDir)).toMatch(/^\/home\/yonder-test\/\.yonder\/slurm\//);
    expect((await manager.logs(job.id)).chunk.data.toString()).toBe(
      "on yonder-test: a 'quoted' $(arg)\n",
    );
    const held = await manager.submit(
      { argv: ['true'], schedulerOptions: ['--hold'] },
      { profile: 'hpc' },
    );
    const [cancelled] = await manager.cancel([held.id], { waitMs: 30_000 });
    // squeue's CANCELLED settles it at once (sacct's "CANCELLED by UID" when it answered first).
    expect(cancelled).toMatchObject({
      state: 'cancelled',
      nativeState: expect.stringMatching(/^CANCELLED/),
    });
    await manager.close();
  }, 150_000);
});
