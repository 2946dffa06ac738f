import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type JobSpec,
  type Profile,
  type RunOptionsV1,
  type SubmitRequestV1,
  YonderError,
} from '@yonder/core';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSlurmBackend } from './slurm-backend.js';
import { SUBMIT_PART_JOBS } from './slurm-submit.js';
import { countingTransport, requireCluster, workdir } from './test-support/cluster.js';
import { shimmedSlurm } from './test-support/shimmed-slurm.js';
import { createSlurmShims } from './test-support/slurm-shims.js';

// Issue 24 item 24 and issue 29: a batch of any size goes in parts; no id for a job that was not submitted.
beforeAll(() => requireCluster());

/** Slurm ids to cancel after each test (the jobs are held: they never take the node's CPUs). */
const toCancel: string[] = [];
afterEach(() => {
  for (let at = 0; at < toCancel.length; at += 100)
    execFileSync('scancel', toCancel.slice(at, at + 100));
  toCancel.length = 0;
});

/** The remote commands that submitted (the submit script's), among all those the transport ran. */
function submitCommands(commands: readonly string[][], binDir: string): number {
  // Each submit command's arguments start with the bin directory and the number of jobs.
  return commands.filter((args) => args[0] === binDir && /^\d+$/.test(args[1] ?? '')).length;
}

/** The backend, a shim sbatch that accepts every job without asking Slurm (ids 9000001, …), and requests. */
function fakeSbatch() {
  const shims = createSlurmShims();
  const counter = join(mkdtempSync(join(tmpdir(), 'yonder-sbatch-count-')), 'n');
  shims.behave(
    'sbatch',
    `if [ "$1" = --version ]; then exec "$real" "$@"; fi
n=$(cat '${counter}' 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > '${counter}'; echo $((9000000 + n))`,
  );
  const profile: Profile = {
    name: 'hpc',
    backend: 'slurm',
    workdir: workdir(),
    options: { binDir: shims.binDir },
  };
  const request = (index: number, argv: string[]): SubmitRequestV1 => ({
    id: `job${String(index).padStart(8, '0')}`,
    name: 'many',
    marker: `yonder:${index}`,
    createdAt: new Date().toISOString(),
    argv,
    env: { N: String(index) },
    secrets: {},
    resources: {},
    schedulerOptions: [],
    profile,
  });
  return {
    shims,
    profile,
    request,
    backend: createSlurmBackend(),
    state: mkdtempSync(join(tmpdir(), 'yonder-slurm-state-')),
  };
}

describe('submit --batch of many jobs', () => {
  it('500 jobs, each with a long argument list, are all submitted in three remote commands, none left submitting', async () => {
    const { manager, transport, shims } = await shimmedSlurm();
    // Arguments with quotes, $(), newlines, a leading dash and unicode: 500 jobs of ~1 KiB each, with the batch script per job, were past
    // what one command line holds, which made the whole batch fail with E2BIG.
    const filler = `-x 'q' "d" $(no) ;\nnewline é ${'z'.repeat(1000)}`;
    const specs: JobSpec[] = Array.from({ length: 500 }, (_, index) => ({
      argv: ['printf', '%s', filler, String(index)],
      name: `batch-${index}`,
      schedulerOptions: ['--hold'],
    }));
    const jobs = await manager.submitMany(specs, { profile: 'hpc' });
    for (const job of jobs) if (job.externalId) toCancel.push(job.externalId);
    expect(jobs.map((job) => job.state)).toEqual(Array(500).fill('pending'));
    expect(jobs.every((job) => job.error === null && /^\d+$/.test(job.externalId ?? ''))).toBe(
      true,
    );
    expect(new Set(jobs.map((job) => job.externalId)).size).toBe(500);
    // Measured: 500 jobs take ceil(500 / 200) = 3 submit commands.
    expect(submitCommands(transport.commands, shims.binDir)).toBe(
      Math.ceil(500 / SUBMIT_PART_JOBS),
    );
    const { jobs: ledger } = await manager.store.listJobs({});
    expect(ledger.filter((job) => job.state === 'submitting')).toEqual([]);
    // Slurm holds them with the names yonder gave, and each job's script is its own.
    const queued = execFileSync('squeue', ['--me', '--noheader', '--states=all', '--format=%A'], {
      encoding: 'utf8',
    });
    for (const job of jobs) expect(queued).toContain(job.externalId as string);
  }, 600_000);

  it('a job whose argument is too long for a command line is refused alone, naming why; the others are submitted', async () => {
    const { manager } = await shimmedSlurm();
    const specs: JobSpec[] = [0, 1, 2, 3].map((index) => ({
      // One argument past Linux's 128 KiB for a single argument (E2BIG).
      argv: ['echo', index === 1 ? 'y'.repeat(200 * 1024) : `-n ${index}`],
      schedulerOptions: ['--hold'],
    }));
    const jobs = await manager.submitMany(specs, { profile: 'hpc' });
    for (const job of jobs) if (job.externalId) toCancel.push(job.externalId);
    expect(jobs.map((job) => job.state)).toEqual(['pending', 'failed', 'pending', 'pending']);
    expect(jobs[1]).toMatchObject({
      externalId: null,
      reason: 'submit-refused',
      failureKind: 'submission',
      error: {
        code: 'E_SUBMIT_REFUSED',
        message: expect.stringMatching(
          /^the job's arguments \(201 KiB\) are too long for one command on the target \(Argument list too long\); nothing was submitted/,
        ),
      },
    });
  }, 120_000);

  it('10,000 jobs through a shim sbatch: every one answered, in parts of at most 200', async () => {
    const { shims, profile, request, backend, state } = fakeSbatch();
    const transport = countingTransport();
    const requests = Array.from({ length: 10_000 }, (_, index) =>
      request(index, ['true', String(index), "it's $(x)"]),
    );
    const outcomes = await backend.submitMany?.(requests, {
      transport,
      options: { binDir: shims.binDir },
      stateDirectory: state,
    });
    expect(outcomes).toHaveLength(10_000);
    const ids = (outcomes ?? []).map((outcome) =>
      'error' in outcome ? String(outcome.error) : outcome.externalId,
    );
    expect(ids).toEqual(Array.from({ length: 10_000 }, (_, index) => String(9_000_001 + index)));
    expect(submitCommands(transport.commands, shims.binDir)).toBe(10_000 / SUBMIT_PART_JOBS);
    expect(readdirSync(profile.workdir as string)).toHaveLength(10_000);
  }, 1_200_000);

  it('once a part gets no answer, or the submit is interrupted, no further part is sent and those jobs are not submitted', async () => {
    const { shims, request, backend, state } = fakeSbatch();
    // Each job's arguments (2 × 100 KiB) fill a part of their own.
    const big = (index: number) =>
      request(index, ['echo', 'a'.repeat(100 * 1024), 'b'.repeat(100 * 1024)]);
    const inner = countingTransport();
    let submitted = 0;
    const controller = new AbortController();
    const interrupting = {
      ...inner,
      async runScript(script: string, args: readonly string[], options?: RunOptionsV1) {
        const result = await inner.runScript(script, args, options);
        if (args[0] === shims.binDir && /^\d+$/.test(args[1] ?? '')) {
          submitted += 1;
          controller.abort();
        }
        return result;
      },
    };
    const interrupted = await backend.submitMany?.([big(0), big(1), big(2)], {
      transport: interrupting,
      options: { binDir: shims.binDir },
      stateDirectory: state,
      signal: controller.signal,
    });
    expect(submitted).toBe(1);
    expect(interrupted?.[0]).toMatchObject({ externalId: '9000001' });
    for (const outcome of interrupted?.slice(1) ?? [])
      expect(outcome).toMatchObject({
        error: {
          code: 'E_SUBMIT_FAILED',
          message: 'the submit was interrupted before this job was sent; nothing was submitted.',
        },
      });
    // A part whose command gets no answer: its job's outcome is unknown, the rest not sent.
    const lost = {
      ...inner,
      async runScript(script: string, args: readonly string[], options?: RunOptionsV1) {
        if (args[0] === shims.binDir && /^\d+$/.test(args[1] ?? ''))
          throw new YonderError('E_TRANSPORT', 'the connection was lost');
        return inner.runScript(script, args, options);
      },
    };
    const unanswered = await backend.submitMany?.([big(3), big(4)], {
      transport: lost,
      options: { binDir: shims.binDir },
      stateDirectory: state,
    });
    expect(unanswered?.[0]).toMatchObject({ error: { code: 'E_TRANSPORT' } });
    expect(unanswered?.[1]).toMatchObject({
      error: {
        code: 'E_SUBMIT_FAILED',
        message:
          'not sent, since an earlier part of the batch got no answer (the connection was lost); nothing was submitted.',
      },
    });
  }, 120_000);
});
