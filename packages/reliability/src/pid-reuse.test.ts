/**
 * Reliability suite, part 5: pid reuse. The local and ssh backends identify a job's process by
 * pid + start time + boot id. A record whose pid (or start time, or boot id) now names a live
 * unrelated process, a "bystander" this test starts in its own process group, must never be
 * reported as the job and never be signalled. The same holds for lock holders.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { readBootId, readProcessIdentity } from '@yonder/core/backend-kit';
import {
  alive,
  type Raw,
  requireCliBuild,
  requireSshHosts,
  runCli,
  runCliJson,
  unsignalled,
  until,
  untilJobGone,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bystander, cleanupAll, readJob, rewriteRecord, scratch, summary } from './harness.js';

const SSH_CONFIG = '/var/tmp/yonder-ssh/client/config';
const survivors: string[] = [];

beforeAll(() => requireCliBuild());
afterAll(() => {
  summary(
    `pid reuse: ${survivors.length} recycled identities never reported running nor signalled (${survivors.join('; ')})`,
  );
  cleanupAll();
});

/**
 * What pid reuse does to what the wrapper recorded: its pid now names another process. Whatever
 * else the wrapper wrote (its start time, …) stays as it was.
 */
function recyclePid(path: string, pid: number): void {
  const text = readFileSync(path, 'utf8');
  expect(text).toMatch(/^\d+/);
  writeFileSync(path, text.replace(/^\d+/, String(pid)));
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {}
}

async function submitSleeper(
  cli: { state: string; cwd: string },
  extra: string[] = [],
): Promise<any> {
  const result = await runCli(['submit', ...extra, '--', 'sleep', '120'], cli);
  expect(result.code, result.stderr).toBe(0);
  return readJob(cli.state, result.stdout.trim());
}

/** No transition of the job after `from` says it was seen running. */
function neverSeenRunningAfter(job: any, from: number): void {
  for (const step of job.history.slice(from)) expect(step.to).not.toBe('running');
}

describe('local backend', () => {
  it('a record whose pid is now an unrelated live process: that process is neither running nor signalled (cancel and wait)', async () => {
    const state = scratch('pid-state');
    const cli = { state, cwd: state };
    for (const mode of ['cancel', 'wait'] as const) {
      const job = await submitSleeper(cli);
      const other = bystander();
      await until(() => readProcessIdentity(other.pid as number) !== null, 5_000, 'the bystander');
      rewriteRecord(state, job.id, (record) => {
        record.data.pid = other.pid;
        record.externalId = String(other.pid);
      });
      const steps = job.history.length;
      // Refresh until a poll has looked (a refresh within the shared poll's minimum interval of
      // the last round does not poll): it misses the job, and takes nothing for it.
      let status: Raw;
      await until(
        async () => {
          status = await runCliJson(['status', job.id], cli);
          return readJob(state, job.id).misses >= 1;
        },
        10_000,
        'a poll to miss the job',
        200,
      );
      expect(status.doc.result.error).toBeNull();
      const ended =
        mode === 'cancel'
          ? (await runCliJson(['cancel', job.id], cli)).doc.result[0]
          : (await runCliJson(['wait', '--timeout', '20', job.id], cli)).doc.result.jobs[0];
      expect(ended.state).toBe(mode === 'cancel' ? 'cancelled' : 'failed');
      if (mode === 'wait') expect(ended.reason).toBe('lost');
      neverSeenRunningAfter(readJob(state, job.id), steps);
      expect(unsignalled(other.pid as number)).toBe(true);
      if (mode === 'cancel') {
        // The cancel still reaches the real job, through the marker its processes carry
        // (YONDER_JOB_ID), never through the pid the record names now.
        await untilJobGone(job.data.pid);
      } else {
        // A wait signals nothing: the real job runs on.
        expect(unsignalled(job.data.pid)).toBe(true);
      }
      killGroup(job.data.pid);
      survivors.push(`local pid→bystander, ${mode}`);
    }
  }, 60_000);

  it('a record whose start time no longer matches its pid (a recycled pid): nothing is signalled by that pid; the job is reached by its marker', async () => {
    const state = scratch('pid-start');
    const cli = { state, cwd: state };
    const job = await submitSleeper(cli);
    rewriteRecord(state, job.id, (record) => {
      record.data.startTime = String(Number(record.data.startTime) - 1);
    });
    const cancelled = await runCliJson(['cancel', job.id], cli);
    expect(cancelled.doc.result[0].state).toBe('cancelled');
    neverSeenRunningAfter(readJob(state, job.id), job.history.length);
    // The process under the recorded pid is not taken for the job by its pid (its start time
    // differs), so no process group is signalled; it is the job all the same, by the marker its
    // processes carry, and the cancel reaches it that way.
    await untilJobGone(job.data.pid);
    killGroup(job.data.pid);
    survivors.push('local start time changed, cancel');
  }, 30_000);

  it('a record from another boot whose pid and start time match a live process: not it', async () => {
    const state = scratch('pid-boot');
    const cli = { state, cwd: state };
    const job = await submitSleeper(cli);
    const other = bystander();
    const identity = readProcessIdentity(other.pid as number);
    expect(identity).not.toBeNull();
    rewriteRecord(state, job.id, (record) => {
      record.data.pid = other.pid;
      record.data.startTime = identity?.startTime;
      record.data.bootId = `${readBootId().slice(0, -4)}0000`;
    });
    const cancelled = await runCliJson(['cancel', job.id], cli);
    expect(cancelled.doc.result[0].state).toBe('cancelled');
    expect(unsignalled(other.pid as number)).toBe(true);
    killGroup(job.data.pid);
    survivors.push('local other boot id, cancel');
  }, 30_000);

  it('a lock whose holder pid was recycled does not block: it is broken at once', async () => {
    const state = scratch('pid-lock');
    const cli = { state, cwd: state };
    const job = await submitSleeper(cli);
    const other = bystander();
    mkdirSync(join(state, 'locks'), { recursive: true });
    // The holder died; its pid now belongs to the bystander (another start time).
    writeFileSync(
      join(state, 'locks', `${job.id}.lock`),
      JSON.stringify({
        pid: other.pid,
        startTime: '1',
        bootId: readBootId(),
        host: hostname(),
        nonce: 'dead0000',
        expiresAt: Date.now() + 600_000,
      }),
    );
    const cancelled = await runCliJson(['cancel', job.id], cli);
    expect(cancelled.doc.result[0].state).toBe('cancelled');
    expect(cancelled.ms).toBeLessThan(5_000);
    expect(unsignalled(other.pid as number)).toBe(true);
    survivors.push(`lock holder recycled (cancel took ${cancelled.ms} ms)`);
  }, 60_000);

  // Regression (found by this suite, fixed in 366dc51): the local backend's recover() read the
  // pid from wrapper.pid and took the start time of whatever process had that pid NOW, so a
  // recycled pid became "the job": reported running (source recover), and `yonder cancel`
  // SIGTERMed the unrelated process group (repeatCancels runs before the poll). The wrapper now
  // records its own start time and recovery compares it.
  it('recovering an interrupted submit never adopts a recycled wrapper pid', async () => {
    const state = scratch('pid-recover');
    const cli = { state, cwd: state };
    const job = await submitSleeper(cli);
    const wrapperPid = join(job.data.jobDir, 'wrapper.pid');
    await until(() => existsSync(wrapperPid), 5_000, 'the wrapper to record its pid');
    killGroup(job.data.pid);
    await until(() => !alive(job.data.pid), 5_000, 'the job to die');
    const other = bystander();
    // As a crash leaves it: the submit recorded, the wrapper started (and since died), its pid
    // reused by the bystander, the submitter gone.
    rewriteRecord(state, job.id, (record) => {
      record.state = 'submitting';
      record.externalId = null;
      record.data = {};
      record.history = record.history.slice(0, 1);
      record.submitter = { pid: 999_999, startTime: '1', bootId: readBootId(), host: hostname() };
    });
    recyclePid(wrapperPid, other.pid as number);
    const status = await runCliJson(['status', job.id], cli);
    const cancel = await runCliJson(['cancel', job.id], cli);
    const survived = unsignalled(other.pid as number);
    summary(
      `recover with a recycled wrapper.pid: status said ${status.doc.result.state} (externalId ${status.doc.result.externalId}, bystander ${other.pid}); after cancel the bystander is ${survived ? 'alive' : 'DEAD (signalled)'}`,
    );
    expect(status.doc.result.externalId).not.toBe(String(other.pid));
    expect(status.doc.result.state).not.toBe('running');
    expect(cancel.doc.ok).toBe(true);
    expect(survived).toBe(true);
  }, 30_000);
});

describe('ssh backend', () => {
  it('a record whose pid is now another process of the remote user: that process is neither running nor signalled', async () => {
    requireSshHosts();
    const state = scratch('pid-ssh');
    const cli = { state, cwd: state };
    const added = await runCli(
      ['profile', 'add', 'box', '--backend', 'ssh', '--host', 'target', '--ssh-config', SSH_CONFIG],
      cli,
    );
    expect(added.code, added.stderr).toBe(0);
    const job = await submitSleeper(cli, ['--profile', 'box']);
    // A bystander owned by the same remote user, leading its own session and process group
    // (a unique sleep length, so that it is found, and killed, by its exact command line).
    const seconds = `120.${randomBytes(3).readUIntBE(0, 3)}`;
    const other = spawn('runuser', ['-u', 'yonder-test', '--', 'setsid', '-w', 'sleep', seconds], {
      detached: true,
      stdio: 'ignore',
    });
    other.unref();
    let otherPid = 0;
    await until(
      () => {
        try {
          otherPid = Number(
            execFileSync('pgrep', ['-u', 'yonder-test', '-x', '-f', `sleep ${seconds}`], {
              encoding: 'utf8',
            }).trim(),
          );
        } catch {
          return false;
        }
        return otherPid > 0;
      },
      5_000,
      'the remote bystander',
    );
    expect(otherPid).toBeGreaterThan(0);
    rewriteRecord(state, job.id, (record) => {
      record.data.pid = otherPid;
      record.externalId = String(otherPid);
    });
    const cancelled = await runCliJson(['cancel', job.id], cli);
    expect(cancelled.doc.result[0].state).toBe('cancelled');
    neverSeenRunningAfter(readJob(state, job.id), job.history.length);
    expect(unsignalled(otherPid)).toBe(true);
    // The real job is reached through its marker (YONDER_JOB_ID), never through the pid.
    await untilJobGone(job.data.pid);
    killGroup(otherPid);
    killGroup(job.data.pid);
    survivors.push('ssh pid→remote bystander, cancel');
  }, 60_000);

  // Regression (found by this suite, fixed in 366dc51): the ssh backend's recover(), added in
  // 7d65569, had the same flaw: SSH_RECOVER_SCRIPT reported the start time of whatever process
  // had the wrapper's pid now, and SSH_CANCEL_SCRIPT, whose identity check then matched, sent
  // the TERM to the unrelated process group.
  it('recovering an interrupted ssh submit never adopts a recycled wrapper pid', async () => {
    requireSshHosts();
    const state = scratch('pid-ssh-recover');
    const cli = { state, cwd: state };
    await runCli(
      ['profile', 'add', 'box', '--backend', 'ssh', '--host', 'target', '--ssh-config', SSH_CONFIG],
      cli,
    );
    const job = await submitSleeper(cli, ['--profile', 'box']);
    const wrapperPid = join(job.data.jobDir, 'wrapper.pid');
    await until(() => existsSync(wrapperPid), 5_000, 'the wrapper to record its pid');
    killGroup(job.data.pid);
    await until(() => !alive(job.data.pid), 5_000, 'the remote job to die');
    const seconds = `120.${randomBytes(3).readUIntBE(0, 3)}`;
    spawn('runuser', ['-u', 'yonder-test', '--', 'setsid', '-w', 'sleep', seconds], {
      detached: true,
      stdio: 'ignore',
    }).unref();
    let otherPid = 0;
    await until(
      () => {
        try {
          otherPid = Number(
            execFileSync('pgrep', ['-u', 'yonder-test', '-x', '-f', `sleep ${seconds}`], {
              encoding: 'utf8',
            }).trim(),
          );
        } catch {
          return false;
        }
        return otherPid > 0;
      },
      5_000,
      'the remote bystander',
    );
    rewriteRecord(state, job.id, (record) => {
      record.state = 'submitting';
      record.externalId = null;
      record.data = {};
      record.history = record.history.slice(0, 1);
      record.submitter = { pid: 999_999, startTime: '1', bootId: readBootId(), host: hostname() };
    });
    recyclePid(wrapperPid, otherPid);
    try {
      const status = await runCliJson(['status', job.id], cli);
      await runCliJson(['cancel', job.id], cli);
      const survived = unsignalled(otherPid);
      summary(
        `ssh recover with a recycled wrapper.pid: status said ${status.doc.result.state} (externalId ${status.doc.result.externalId}, bystander ${otherPid}); after cancel the bystander is ${survived ? 'alive' : 'DEAD (signalled)'}`,
      );
      expect(status.doc.result.externalId).not.toBe(String(otherPid));
      expect(survived).toBe(true);
    } finally {
      killGroup(otherPid);
    }
  }, 60_000);
});
