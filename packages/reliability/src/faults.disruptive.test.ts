/**
 * Reliability suite, part 3 (disruptive): sshd connections killed mid-operation, an sshd
 * stopped, slurmctld and slurmdbd stopped and restarted. Each gives a clear error, no failed
 * query changes a job's state, nothing is lost, and everything converges once the fault
 * clears. Runs alone, after the other tests (vitest project `disruptive`), and waits while
 * /tmp/yonder-bench.lock exists. Services are always restored.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSshBackend, createSshTransport } from '@yonder/backend-ssh';
import { createRegistry, JobManager, type Profile } from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import {
  collectProcess,
  REPOSITORY_ROOT,
  requireCliBuild,
  requireSlurm,
  requireSshHosts,
  runCli,
  runCliJson,
  SLURM_SCRIPT,
  SSH_HOSTS_SCRIPT,
  serviceCommand,
  serviceStatus,
  spawnCli,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  cleanupAll,
  readJob,
  readRecords,
  scratch,
  sharedDir,
  summary,
  waitForBenchLock,
} from './harness.js';

const SSH_CONFIG = '/var/tmp/yonder-ssh/client/config';
const faults: string[] = [];

/**
 * Errors ssh2 emits while a Client has no 'error' listener. The ssh transport used to leave
 * such a gap between 'ready' and attaching its own listeners (found here, fixed in 4b3dded;
 * regression test in faults.test.ts): unhandled, one would crash this test process at random.
 * They are counted and reported (the figure should stay 0) rather than left to do that.
 */
let unlistenedErrors = 0;
const ssh2Client = (
  createRequire(join(REPOSITORY_ROOT, 'packages/backend-ssh/package.json'))('ssh2') as {
    Client: { prototype: { emit: (event: string, ...args: unknown[]) => boolean } };
  }
).Client;
const realEmit = ssh2Client.prototype.emit;

beforeAll(() => {
  requireCliBuild();
  requireSlurm();
  requireSshHosts();
  ssh2Client.prototype.emit = function (
    this: { listenerCount(event: string): number },
    event: string,
    ...args: unknown[]
  ): boolean {
    if (event === 'error' && this.listenerCount('error') === 0) {
      unlistenedErrors += 1;
      return false;
    }
    return realEmit.call(this, event, ...args);
  };
});

// Another process benchmarks these services: never disturb them while it holds its lock.
beforeEach(async () => {
  await waitForBenchLock();
});

afterAll(() => {
  ssh2Client.prototype.emit = realEmit;
  // Leave the services healthy whatever happened.
  serviceCommand(SSH_HOSTS_SCRIPT, 'start');
  serviceCommand(SLURM_SCRIPT, 'start');
  const healthy = serviceStatus(SSH_HOSTS_SCRIPT) === 0 && serviceStatus(SLURM_SCRIPT) === 0;
  summary(
    `faults survived: ${faults.length} (${faults.join('; ')}); ssh errors emitted with no listener: ${unlistenedErrors}; services healthy afterwards: ${healthy}`,
  );
  cleanupAll();
  expect(healthy).toBe(true);
});

/** History steps as `from→to@source`, to compare before and after a fault. */
function steps(job: any): string[] {
  return job.history.map((step: any) => `${step.from}→${step.to}@${step.source}`);
}

describe('ssh', () => {
  it('connections killed mid-operation: submits and polls fail cleanly, nothing runs twice, everything converges', async () => {
    const state = scratch('dis-ssh-state');
    const shared = sharedDir('dis-ssh-markers');
    const markers = join(shared, 'markers');
    writeFileSync(markers, '');
    chmodSync(markers, 0o666);
    const manager = new JobManager({
      store: createFsStore({ location: state }),
      registry: createRegistry({
        backends: [createSshBackend()],
        transports: {
          ssh: (profile: Profile) =>
            createSshTransport({ profile, env: { ...process.env, SSH_AUTH_SOCK: '' } }),
        },
      }),
      stateDirectory: state,
      minPollIntervalMs: 0,
    });
    try {
      await manager.saveProfile({
        name: 'box',
        backend: 'ssh',
        host: 'target',
        ssh: { config: SSH_CONFIG },
      });
      const marker = [
        'sh',
        '-c',
        'printf "%s\\n" "$YONDER_JOB_ID" >> "$1"; sleep 2',
        'marker',
        markers,
      ];
      const long = await manager.submit({ argv: ['sleep', '4'] }, { profile: 'box' });
      const failing = await manager.submit(
        { argv: ['sh', '-c', 'sleep 3; exit 3'] },
        { profile: 'box' },
      );
      // 24 submits (each carrying 1 MiB of settings, so that they take a while) in flight on
      // the open connection when every connection is killed (the kill blocks this process, so
      // what was in flight stays in flight), then again while they reconnect.
      const settings = { blob: 'x'.repeat(1024 * 1024) };
      const inFlight = Promise.allSettled(
        Array.from({ length: 24 }, () =>
          manager.submit({ argv: marker, name: 'marker', settings }, { profile: 'box' }),
        ),
      );
      await sleep(5);
      serviceCommand(SSH_HOSTS_SCRIPT, 'kill-connections');
      await sleep(30);
      serviceCommand(SSH_HOSTS_SCRIPT, 'kill-connections');
      const outcomes = await inFlight;
      const rejected = outcomes.filter((o) => o.status === 'rejected');
      // The fault really hit submits in flight.
      expect(rejected.length).toBeGreaterThan(0);
      for (const outcome of rejected)
        expect((outcome as PromiseRejectedResult).reason.code).toMatch(/^E_(TRANSPORT|TIMEOUT)$/);
      // Polls with the connection killed between and during them.
      const before = new Map([long, failing].map((job) => [job.id, steps(job)]));
      serviceCommand(SSH_HOSTS_SCRIPT, 'kill-connections');
      const polling = manager.refresh({ force: true });
      serviceCommand(SSH_HOSTS_SCRIPT, 'kill-connections');
      await polling;
      for (const job of [long, failing]) {
        const now = await manager.store.getJob(job.id);
        // A failed query changes no state: the job is as it was, or was truly observed.
        if (now?.error) expect(steps(now)).toEqual(before.get(job.id));
      }
      // Interrupted submits: a refresh recovers those the host started (wrapper.pid in their job
      // directory). Those that left no trace wait for the ssh backend's 90 s submit grace; let
      // that time pass by back-dating them, then refresh again.
      await manager.refresh({ force: true });
      const stillSubmitting = (await manager.list({ all: true, refresh: false })).jobs.filter(
        (job) => job.state === 'submitting',
      );
      for (const job of stillSubmitting)
        await manager.store.updateJob(job.id, (current) => ({
          ...current,
          createdAt: new Date(Date.now() - 120_000).toISOString(),
        }));
      await manager.refresh({ force: true });
      const all = (await manager.list({ all: true, refresh: false })).jobs;
      const { jobs } = await manager.wait(
        all
          .filter((job) => !['succeeded', 'failed', 'cancelled'].includes(job.state))
          .map((job) => job.id),
        { timeoutMs: 40_000 },
      );
      const final = (await manager.list({ all: true, refresh: false })).jobs;
      const byId = new Map(final.map((job) => [job.id, job]));
      expect(jobs.every((job) => ['succeeded', 'failed', 'cancelled'].includes(job.state))).toBe(
        true,
      );
      expect(byId.get(long.id)).toMatchObject({ state: 'succeeded', error: null });
      expect(byId.get(failing.id)).toMatchObject({ state: 'failed', exitCode: 3 });
      const ran = readFileSync(markers, 'utf8').split('\n').filter(Boolean);
      const runs = new Map<string, number>();
      for (const id of ran) runs.set(id, (runs.get(id) ?? 0) + 1);
      // Nothing ran twice; everything that ran is in the ledger as started; all terminal.
      expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
      for (const id of ran) expect(byId.get(id)?.externalId, `job ${id} ran`).not.toBeNull();
      for (const job of final)
        expect(['succeeded', 'failed', 'cancelled'], job.id).toContain(job.state);
      // Each marker job ran exactly once and succeeded, or never ran and failed as an
      // infrastructure problem (submit interrupted, or killed with the connection: lost).
      const markerJobs = final.filter((job) => job.name === 'marker');
      const neverRan: string[] = [];
      for (const job of markerJobs) {
        if (runs.get(job.id) === 1) expect(job.state, job.id).toBe('succeeded');
        else {
          expect(job, job.id).toMatchObject({ state: 'failed', failureKind: 'infrastructure' });
          neverRan.push(String(job.reason));
        }
      }
      const recovered = markerJobs.filter((job) =>
        job.history.some((step) => step.source === 'recover' && step.to === 'running'),
      ).length;
      expect(readRecords(state).filter((record) => record.job === null)).toEqual([]);
      faults.push('ssh kill-connections ×4');
      summary(
        `ssh connections killed mid-operation (4 times): 24 submits (1 MiB each) in flight → ${outcomes.length - rejected.length} answered, ${rejected.length} E_TRANSPORT; ` +
          `polls across the kills changed no state; ${recovered} interrupted submits recovered from the host, ${neverRan.length} never ran (${[...new Set(neverRan)].map((reason) => `${reason} ×${neverRan.filter((r) => r === reason).length}`).join(', ') || '-'}), ` +
          `${markerJobs.length - neverRan.length} ran exactly once and succeeded; sleep → succeeded, exit 3 → failed 3; nothing ran unrecorded or twice`,
      );
    } finally {
      await manager.close();
    }
  }, 120_000);

  it('sshd stopped: a clear E_TRANSPORT, no state changes, cancel remembered; converges when sshd is back', async () => {
    const state = scratch('dis-sshd-state');
    const cli = { state, cwd: state };
    await runCli(
      ['profile', 'add', 'box', '--backend', 'ssh', '--host', 'target', '--ssh-config', SSH_CONFIG],
      cli,
    );
    const short = (
      await runCli(['submit', '--profile', 'box', '--', 'sleep', '4'], cli)
    ).stdout.trim();
    const long = (
      await runCli(['submit', '--profile', 'box', '--', 'sleep', '120'], cli)
    ).stdout.trim();
    expect(short).toMatch(/^[0-9a-f]{12}$/);
    const before = [short, long].map((id) => readJob(state, id));
    serviceCommand(SSH_HOSTS_SCRIPT, 'kill-connections');
    const tStop = Date.now();
    serviceCommand(SSH_HOSTS_SCRIPT, 'stop-host', 'target');
    const stopMs = Date.now() - tStop;
    let startMs = 0;
    let restarted = false;
    try {
      const listed = await runCliJson(['list'], cli);
      expect(listed.doc.ok, listed.stderr).toBe(true);
      for (const job of before) {
        const now = readJob(state, job.id);
        expect(now.state).toBe(job.state);
        expect(steps(now)).toEqual(steps(job));
        expect(now.error).toMatchObject({
          code: 'E_TRANSPORT',
          message: expect.stringMatching(/127\.0\.0\.1:2201|target/),
        });
      }
      const submit = await runCliJson(['submit', '--profile', 'box', '--', 'true'], cli);
      expect(submit.doc.error).toMatchObject({
        code: 'E_TRANSPORT',
        message: expect.stringMatching(/127\.0\.0\.1:2201|target/),
      });
      const logs = await runCli(['logs', short], cli);
      expect(logs.code).toBe(1);
      expect(logs.stderr).toMatch(/127\.0\.0\.1:2201|target/);
      // `yonder cancel` records the request, then retries for up to 15 s while the host is down;
      // like a user pressing ^C, stop it once the request is in the ledger.
      const cancel = spawnCli(['cancel', long], cli);
      const cancelled = collectProcess(cancel);
      await until(
        () => readJob(state, long).cancel !== null,
        20_000,
        'the cancel request to be recorded',
      );
      cancel.kill('SIGINT');
      await cancelled;
      const remembered = readJob(state, long);
      expect(remembered.cancel).toMatchObject({ reason: 'user' });
      expect(remembered.state).toBe('running');
      const tStart = Date.now();
      serviceCommand(SSH_HOSTS_SCRIPT, 'start-host', 'target');
      startMs = Date.now() - tStart;
      restarted = true;
    } finally {
      if (!restarted) serviceCommand(SSH_HOSTS_SCRIPT, 'start-host', 'target');
    }
    const tWait = Date.now();
    const waited = await runCliJson(['wait', '--timeout', '60', short, long], {
      ...cli,
      timeoutMs: 90_000,
    });
    expect(waited.doc.result.jobs.map((job: any) => job.state)).toEqual(['succeeded', 'cancelled']);
    faults.push('sshd stopped and restarted');
    summary(
      `sshd stopped (stop-host ${(stopMs / 1000).toFixed(1)} s, start-host ${(startMs / 1000).toFixed(1)} s): list ok with E_TRANSPORT recorded per job (host named), submit/logs → E_TRANSPORT, states and history unchanged, cancel remembered; converged ${((Date.now() - tWait) / 1000).toFixed(1)} s after restart: succeeded + cancelled`,
    );
  }, 120_000);
});

describe('slurm', () => {
  it('slurmctld stopped: no state changes, a clear E_SCHEDULER_UNAVAILABLE, cancel remembered; converges after restart', async () => {
    const state = scratch('dis-ctld-state');
    const workdir = scratch('dis-ctld-work');
    const cli = { state, cwd: workdir };
    expect(
      (await runCli(['profile', 'add', 'hpc', '--backend', 'slurm', '--workdir', workdir], cli))
        .code,
    ).toBe(0);
    const running = (
      await runCli(['submit', '--profile', 'hpc', '--', 'sleep', '6'], cli)
    ).stdout.trim();
    const held = (
      await runCli(['submit', '--profile', 'hpc', '--scheduler-option=--hold', '--', 'true'], cli)
    ).stdout.trim();
    expect(held).toMatch(/^[0-9a-f]{12}$/);
    await runCli(['list'], cli);
    const before = [running, held].map((id) => readJob(state, id));
    const stopped = Date.now();
    serviceCommand(SLURM_SCRIPT, 'stop-ctld');
    let restarted = false;
    let submitMs = 0;
    let startMs = 0;
    try {
      // Refresh until a poll meets the stopped slurmctld (a refresh within the shared poll's
      // minimum interval of the last one does not poll).
      await until(
        async () => {
          const listed = await runCliJson(['list'], cli);
          expect(listed.doc.ok, listed.stderr).toBe(true);
          return before.every((job) => readJob(state, job.id).error !== null);
        },
        20_000,
        'a poll to meet the stopped slurmctld',
        200,
      );
      for (const job of before) {
        const now = readJob(state, job.id);
        expect(now.state).toBe(job.state);
        expect(steps(now)).toEqual(steps(job));
        expect(now.error).toMatchObject({
          code: 'E_SCHEDULER_UNAVAILABLE',
          message: expect.stringContaining('squeue'),
        });
      }
      const submit = await runCliJson(['submit', '--profile', 'hpc', '--', 'true'], {
        ...cli,
        timeoutMs: 120_000,
      });
      submitMs = submit.ms;
      expect(submit.doc.error).toMatchObject({
        code: 'E_SCHEDULER_UNAVAILABLE',
        message: expect.stringMatching(/sbatch/i),
      });
      // `yonder cancel` records the request, then waits up to 15 s for the job to end; like a
      // user pressing ^C, stop it once the request is in the ledger.
      const cancel = spawnCli(['cancel', held], cli);
      const cancelled = collectProcess(cancel);
      await until(
        () => readJob(state, held).cancel !== null,
        20_000,
        'the cancel request to be recorded',
      );
      cancel.kill('SIGINT');
      await cancelled;
      expect(readJob(state, held)).toMatchObject({ state: 'pending', cancel: { reason: 'user' } });
      const tStart = Date.now();
      serviceCommand(SLURM_SCRIPT, 'start-ctld');
      startMs = Date.now() - tStart;
      restarted = true;
    } finally {
      if (!restarted) serviceCommand(SLURM_SCRIPT, 'start-ctld');
    }
    const downFor = (Date.now() - stopped) / 1000;
    const tWait = Date.now();
    const waited = await runCliJson(['wait', '--timeout', '90', running, held], {
      ...cli,
      timeoutMs: 120_000,
    });
    expect(
      waited.doc.result.jobs.map((job: any) => `${job.state} ${job.error?.code ?? ''}`),
    ).toEqual(['succeeded ', 'cancelled ']);
    faults.push('slurmctld stopped and restarted');
    summary(
      `slurmctld down ${downFor.toFixed(0)} s (start-ctld ${(startMs / 1000).toFixed(1)} s, converged ${((Date.now() - tWait) / 1000).toFixed(1)} s after): list ok, states/history unchanged, E_SCHEDULER_UNAVAILABLE recorded; submit refused in ${submitMs} ms; cancel of a held job remembered; after restart: running → succeeded, held → cancelled`,
    );
  }, 240_000);

  it('slurmdbd stopped: a job that ends meanwhile is not declared lost; it converges with its exit code', async () => {
    const state = scratch('dis-dbd-state');
    const workdir = scratch('dis-dbd-work');
    const cli = { state, cwd: workdir };
    expect(
      (await runCli(['profile', 'add', 'hpc', '--backend', 'slurm', '--workdir', workdir], cli))
        .code,
    ).toBe(0);
    const id = (
      await runCli(['submit', '--profile', 'hpc', '--', 'sh', '-c', 'sleep 2; exit 4'], cli)
    ).stdout.trim();
    const job = readJob(state, id);
    const t0 = Date.now();
    serviceCommand(SLURM_SCRIPT, 'stop-dbd');
    const tStopped = Date.now();
    let tEnded = 0;
    let tRestarted = 0;
    let restarted = false;
    let polls = 0;
    try {
      // Wait until Slurm has finished the job (squeue keeps it for MinJobAge), then poll.
      await until(
        async () => {
          const queue = await collectProcess(
            spawn('squeue', ['-h', '-t', 'all', '-j', job.externalId, '-o', '%T']),
          );
          return /FAILED|COMPLETED/.test(queue.stdout);
        },
        30_000,
        'Slurm to finish the job',
        300,
      );
      tEnded = Date.now();
      for (let round = 0; round < 3; round += 1) {
        const status = await runCliJson(['status', id], cli);
        polls += 1;
        // Never lost: with accounting down, the wrapper's exit-code file settles the job.
        expect(status.doc.result[0].reason).not.toBe('lost');
        if (status.doc.result[0].state === 'failed')
          expect(status.doc.result[0]).toMatchObject({ exitCode: 4, failureKind: 'application' });
        await sleep(1_100);
      }
      const tStart = Date.now();
      serviceCommand(SLURM_SCRIPT, 'start-dbd');
      tRestarted = Date.now() - tStart;
      restarted = true;
    } finally {
      if (!restarted) serviceCommand(SLURM_SCRIPT, 'start-dbd');
    }
    const tWait = Date.now();
    const waited = await runCliJson(['wait', '--timeout', '90', id], {
      ...cli,
      timeoutMs: 120_000,
    });
    const timing = `stop ${((tStopped - t0) / 1000).toFixed(1)} s, job ended after ${((tEnded - tStopped) / 1000).toFixed(1)} s, start-dbd ${(tRestarted / 1000).toFixed(1)} s, converged ${((Date.now() - tWait) / 1000).toFixed(1)} s later`;
    expect(waited.doc.result.jobs[0]).toMatchObject({
      state: 'failed',
      exitCode: 4,
      failureKind: 'application',
    });
    expect(existsSync(join(String(job.data.jobDir), 'exit-code'))).toBe(true);
    faults.push('slurmdbd stopped and restarted');
    summary(
      `slurmdbd down while a job ended: ${polls} polls, never lost (its exit-code file settles it); after restart: failed, exit code 4, application (${timing})`,
    );
  }, 180_000);
});
