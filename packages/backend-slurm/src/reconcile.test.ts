import { readFileSync } from 'node:fs';
import type { BackendJobV1, RunResultV1 } from '@yonder/core';
import { describe, expect, it } from 'vitest';
import { parseSacct, parseSqueue, type SacctRow, type SqueueRow } from './parse.js';
import { reconcile } from './reconcile.js';

/** A recorded output (see __fixtures__/README.md for the commands). */
function fixture(name: string): string {
  return readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');
}

const squeueText = fixture('squeue-yonder.txt');
const sacctText = fixture('sacct-yonder.txt');

/** squeue rows by job id, the way `poll` builds them (an array's first task stands for it). */
function queueMap(rows: readonly SqueueRow[]): Map<string, SqueueRow> {
  const map = new Map<string, SqueueRow>();
  for (const row of rows)
    if (row.jobId === row.displayId || !map.has(row.jobId)) map.set(row.jobId, row);
  return map;
}

function accountingMap(rows: readonly SacctRow[]): Map<string, SacctRow> {
  return new Map(rows.map((row) => [row.jobId, row]));
}

function job(externalId: string | null, jobName: string): BackendJobV1 {
  return {
    id: `job-${externalId ?? 'none'}`,
    name: jobName,
    externalId,
    state: 'running',
    createdAt: '2026-11-30T05:22:30.000Z',
    cancelRequested: false,
    profile: { name: 'hpc', backend: 'slurm' },
    data: { jobName },
  };
}

describe('reconcile', () => {
  const queue = queueMap(parseSqueue(squeueText));
  const accounting = accountingMap(parseSacct(sacctText));
  const noAccounting = new Map<string, SacctRow>();

  it('takes a live job from squeue, whatever sacct says', () => {
    expect(reconcile(job('40', 'yf-running'), queue, accounting)).toMatchObject({
      kind: 'found',
      state: 'running',
      source: 'squeue',
    });
    expect(reconcile(job('40', 'yf-running'), queue, null)).toMatchObject({
      kind: 'found',
      state: 'running',
      source: 'squeue',
    });
    expect(reconcile(job('42', 'yf-held'), queue, noAccounting)).toMatchObject({
      kind: 'found',
      state: 'pending',
      reason: 'JobHeldUser',
      source: 'squeue',
    });
    expect(reconcile(job('44', 'yf-array'), queue, accounting)).toMatchObject({
      kind: 'found',
      state: 'pending',
      source: 'squeue',
    });
  });

  it('takes a terminal job listed by both from sacct, with its exit code', () => {
    expect(reconcile(job('35', 'yf-exit3'), queue, accounting)).toEqual({
      kind: 'found',
      state: 'failed',
      nativeState: 'FAILED',
      exitCode: 3,
      signal: null,
      reason: 'exit code 3',
      failureKind: 'application',
      source: 'sacct',
    });
    expect(reconcile(job('37', 'yf-sigkill'), queue, accounting)).toMatchObject({
      state: 'failed',
      signal: 'SIGKILL',
      reason: 'killed by SIGKILL',
      source: 'sacct',
    });
    expect(reconcile(job('34', 'yf-completed'), queue, accounting)).toMatchObject({
      state: 'succeeded',
      exitCode: 0,
      source: 'sacct',
    });
    expect(reconcile(job('41', 'yf-cancel-running'), queue, accounting)).toMatchObject({
      state: 'cancelled',
      reason: 'cancelled by uid 2000',
      source: 'sacct',
    });
    expect(reconcile(job('39', 'yf name with spaces'), queue, accounting)).toMatchObject({
      state: 'succeeded',
      source: 'sacct',
    });
  });

  it('trusts squeue for COMPLETED before accounting has the job, and waits for anything else', () => {
    expect(reconcile(job('34', 'yf-completed'), queue, noAccounting)).toMatchObject({
      kind: 'found',
      state: 'succeeded',
      exitCode: 0,
      source: 'squeue',
    });
    for (const [id, name] of [
      ['35', 'yf-exit3'],
      ['37', 'yf-sigkill'],
      ['41', 'yf-cancel-running'],
      ['43', 'yf-cancel-pending'],
    ] as const) {
      expect(reconcile(job(id, name), queue, noAccounting)).toEqual({
        kind: 'query-failed',
        source: 'sacct',
        error: {
          code: 'E_SCHEDULER_UNAVAILABLE',
          message: 'waiting for accounting to record the finished job',
        },
      });
    }
  });

  it('waits when sacct still has a live state for a job squeue lists as finished', () => {
    const lagging = accountingMap(parseSacct('35|35|yf-exit3|RUNNING|0:0|\n'));
    expect(reconcile(job('35', 'yf-exit3'), queue, lagging).kind).toBe('query-failed');
  });

  it('is query-failed when sacct failed, except for COMPLETED in squeue', () => {
    const failed: RunResultV1 = {
      exitCode: 1,
      signal: null,
      stdout: '',
      stderr: fixture('sacct-unreachable.stderr.txt'),
      stdoutTruncated: false,
      stderrTruncated: false,
      durationMs: 10,
    };
    const observation = reconcile(job('35', 'yf-exit3'), queue, null, failed);
    expect(observation).toMatchObject({
      kind: 'query-failed',
      source: 'sacct',
      error: { code: 'E_SCHEDULER_UNAVAILABLE' },
    });
    expect(observation.kind === 'query-failed' && observation.error.message).toContain(
      'sacct failed: sacct: error: slurm_persist_conn_open_without_init',
    );
    expect(reconcile(job('35', 'yf-exit3'), queue, null)).toEqual({
      kind: 'query-failed',
      source: 'sacct',
      error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'sacct failed' },
    });
    expect(reconcile(job('999', 'yonder-gone'), queue, null).kind).toBe('query-failed');
    expect(reconcile(job('34', 'yf-completed'), queue, null)).toMatchObject({
      kind: 'found',
      state: 'succeeded',
      source: 'squeue',
    });
  });

  it('says absent when the record has another name (not ours)', () => {
    expect(reconcile(job('35', 'yonder-abc-other'), queue, accounting)).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail: 'Slurm job 35 is named yf-exit3, not yonder-abc-other: not this job',
    });
    // A live squeue record with another name is not ours either: sacct decides.
    expect(reconcile(job('40', 'yonder-abc-other'), queue, accounting)).toMatchObject({
      kind: 'absent',
      source: 'sacct',
    });
    expect(reconcile(job('40', 'yonder-abc-other'), queue, noAccounting)).toMatchObject({
      kind: 'absent',
      detail: 'neither squeue nor sacct knows the job',
    });
  });

  it('says absent when neither knows the job', () => {
    expect(reconcile(job('999', 'yonder-gone'), queue, accounting)).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail: 'neither squeue nor sacct knows the job',
    });
    expect(reconcile(job(null, 'yonder-gone'), queue, accounting).kind).toBe('absent');
    expect(reconcile(job('34', 'yf-completed'), new Map(), new Map()).kind).toBe('absent');
  });

  it('takes a finished job that squeue has purged from sacct', () => {
    expect(reconcile(job('46', 'yf-timeout'), queue, accounting)).toMatchObject({
      kind: 'found',
      state: 'failed',
      reason: 'timeout',
      failureKind: 'application',
      source: 'sacct',
    });
    expect(reconcile(job('36', 'yf-exit137'), new Map(), accounting)).toMatchObject({
      state: 'failed',
      exitCode: 9,
      source: 'sacct',
    });
  });

  it('says absent when sacct says RUNNING but squeue does not list the job', () => {
    const runaway = accountingMap(parseSacct('77|77|yonder-x|RUNNING|0:0|\n'));
    expect(reconcile(job('77', 'yonder-x'), queue, runaway)).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail: 'accounting says RUNNING but squeue no longer lists the job',
    });
  });
});
