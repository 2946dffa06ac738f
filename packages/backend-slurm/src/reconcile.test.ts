import { readFileSync } from 'node:fs';
import type { BackendJobV1, JobState } from '@yonder/core';
import { describe, expect, it } from 'vitest';
import {
  parseSacct,
  parseSqueue,
  SACCT_FIELDS_WITHOUT_TIMES,
  type SacctRow,
  SQUEUE_FIELDS_WITHOUT_TIMES,
  type SqueueRow,
} from './parse.js';
import {
  type QueryFailure,
  reconcile,
  type SlurmEvidence,
  type WrapperFiles,
} from './reconcile.js';

/** A recorded output (see __fixtures__/README.md for the commands). */
function fixture(name: string): string {
  return readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');
}

/** squeue rows by job id, the way `poll` builds them (an array's first task stands for it). */
function queueMap(rows: readonly SqueueRow[]): Map<string, SqueueRow> {
  const map = new Map<string, SqueueRow>();
  for (const row of rows)
    if (row.jobId === row.displayId || !map.has(row.jobId)) map.set(row.jobId, row);
  return map;
}

const queue = queueMap(parseSqueue(fixture('squeue-yonder.txt'), SQUEUE_FIELDS_WITHOUT_TIMES));
const accounting = sacct(fixture('sacct-yonder.txt'));
const noAccounting = sacct('');
const unreachable: QueryFailure = {
  error: {
    code: 'E_SCHEDULER_UNAVAILABLE',
    message: `sacct failed: ${fixture('sacct-unreachable.stderr.txt')}`,
  },
};
/** sacct's words for a code that may have been reduced by 128. */
const REDUCED = "(Slurm's accounting shows exit codes of 128 and more reduced by 128)";
/** The wrapper never started (a pending job, or one whose node never ran it). */
const notStarted: WrapperFiles = { run: 0, started: false, exitCode: null };
/** The wrapper started and has recorded no end (running, or killed before it could). */
const started: WrapperFiles = { run: 0, started: true, exitCode: null };
const exited = (exitCode: number): WrapperFiles => ({ run: 0, started: true, exitCode });

function sacct(text: string): { rows: Map<string, SacctRow> } {
  return {
    rows: new Map(parseSacct(text, SACCT_FIELDS_WITHOUT_TIMES).map((row) => [row.jobId, row])),
  };
}

function job(
  externalId: string | null,
  jobName: string,
  state: JobState = 'pending',
): BackendJobV1 {
  return {
    id: `job-${externalId ?? 'none'}`,
    name: jobName,
    externalId,
    state,
    createdAt: '2026-11-30T05:22:30.000Z',
    cancelRequested: false,
    profile: { name: 'hpc', backend: 'slurm' },
    options: {},
    data: { jobName },
  };
}

/** Reconcile with squeue's fixture rows unless told otherwise. */
function observe(
  target: BackendJobV1,
  accountingAnswer: SlurmEvidence['accounting'],
  files: SlurmEvidence['files'] = notStarted,
  rows: ReadonlyMap<string, SqueueRow> = queue,
) {
  return reconcile(target, {
    queued: rows.get(target.externalId ?? ''),
    accounting: accountingAnswer,
    files,
  });
}

describe('reconcile: squeue and sacct', () => {
  it('takes a live job from squeue, whatever sacct says', () => {
    for (const answer of [accounting, unreachable])
      expect(observe(job('40', 'yf-running'), answer)).toMatchObject({
        kind: 'found',
        state: 'running',
        source: 'squeue',
      });
    expect(observe(job('42', 'yf-held'), noAccounting)).toMatchObject({
      kind: 'found',
      state: 'pending',
      reason: 'JobHeldUser',
      source: 'squeue',
    });
    expect(observe(job('44', 'yf-array'), accounting)).toMatchObject({
      kind: 'found',
      state: 'pending',
      source: 'squeue',
    });
  });

  it('takes a terminal job listed by both from sacct, with its exit code', () => {
    expect(observe(job('35', 'yf-exit3'), accounting)).toEqual({
      kind: 'found',
      state: 'failed',
      nativeState: 'FAILED',
      // Without the wrapper's file: 3 or 131, as sacct up to 25.05 shows both alike.
      exitCode: null,
      signal: null,
      reason: `exit code 3 or 131 ${REDUCED}`,
      failureKind: 'application',
      source: 'sacct',
      endedOnItsOwn: true,
    });
    expect(observe(job('37', 'yf-sigkill'), accounting)).toMatchObject({
      state: 'failed',
      signal: 'SIGKILL',
      reason: 'killed by SIGKILL',
      source: 'sacct',
    });
    expect(observe(job('34', 'yf-completed'), accounting)).toMatchObject({
      state: 'succeeded',
      exitCode: 0,
      source: 'sacct',
    });
    expect(observe(job('41', 'yf-cancel-running'), accounting, started)).toMatchObject({
      state: 'cancelled',
      reason: 'cancelled by uid 2000',
      source: 'sacct',
    });
    expect(observe(job('39', 'yf name with spaces'), accounting)).toMatchObject({
      state: 'succeeded',
      source: 'sacct',
    });
  });

  it('trusts squeue for COMPLETED before accounting has the job, and waits for anything else', () => {
    expect(observe(job('34', 'yf-completed'), noAccounting)).toMatchObject({
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
      expect(observe(job(id, name), noAccounting)).toEqual({
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
    const lagging = sacct('35|35|yf-exit3|RUNNING|0:0|\n');
    expect(observe(job('35', 'yf-exit3'), lagging).kind).toBe('query-failed');
  });

  it('is query-failed when sacct failed, except for COMPLETED in squeue', () => {
    expect(observe(job('35', 'yf-exit3'), unreachable)).toEqual({
      kind: 'query-failed',
      source: 'sacct',
      error: unreachable.error,
    });
    expect(observe(job('999', 'yonder-gone'), unreachable)).toMatchObject({
      kind: 'query-failed',
      error: unreachable.error,
    });
    expect(observe(job('34', 'yf-completed'), unreachable)).toMatchObject({
      kind: 'found',
      state: 'succeeded',
      source: 'squeue',
    });
  });

  it('says absent when the record has another name (not ours) and the wrapper never started', () => {
    expect(observe(job('35', 'yonder-abc-other'), accounting)).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail: 'Slurm job 35 is named yf-exit3, not yonder-abc-other: not this job',
    });
    // A live squeue record with another name is not ours either: sacct decides.
    expect(observe(job('40', 'yonder-abc-other'), accounting)).toMatchObject({
      kind: 'absent',
      source: 'sacct',
    });
    expect(observe(job('40', 'yonder-abc-other'), noAccounting)).toMatchObject({
      kind: 'absent',
      detail: 'neither squeue nor sacct knows the job, and its wrapper never started',
    });
  });

  it('says absent only when no source knows the job', () => {
    expect(observe(job('999', 'yonder-gone'), accounting)).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail: 'neither squeue nor sacct knows the job, and its wrapper never started',
    });
    expect(observe(job('34', 'yf-completed'), noAccounting, notStarted, new Map()).kind).toBe(
      'absent',
    );
  });

  it('takes a finished job that squeue has purged from sacct', () => {
    expect(observe(job('46', 'yf-timeout'), accounting)).toMatchObject({
      kind: 'found',
      state: 'failed',
      reason: 'timeout',
      failureKind: 'application',
      source: 'sacct',
    });
    // `exit 137` without the wrapper's file: sacct's 9:0 is not taken for exit code 9.
    expect(observe(job('36', 'yf-exit137'), accounting, notStarted, new Map())).toMatchObject({
      state: 'failed',
      exitCode: null,
      signal: null,
      reason: `exit code 9 or 137 ${REDUCED}`,
      source: 'sacct',
    });
  });

  it('says absent when sacct says RUNNING but squeue does not list the job (a runaway record)', () => {
    const runaway = sacct('77|77|yonder-x|RUNNING|0:0|\n');
    expect(observe(job('77', 'yonder-x', 'running'), runaway)).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail: 'accounting says RUNNING but squeue no longer lists the job',
    });
    expect(observe(job('77', 'yonder-x', 'running'), runaway, started)).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail:
        'accounting says RUNNING but squeue no longer lists the job, and its wrapper has recorded no end',
    });
  });

  it('takes a live accounting row beside a squeue that listed nothing at all as a failed query, never an absence', () => {
    for (const state of ['RUNNING', 'PENDING']) {
      const live = sacct(`77|77|yonder-x|${state}|0:0|\n`);
      for (const files of [started, notStarted]) {
        expect(
          reconcile(job('77', 'yonder-x', 'running'), {
            queued: undefined,
            queueEmpty: true,
            accounting: live,
            files,
          }),
        ).toEqual({
          kind: 'query-failed',
          source: 'squeue',
          error: {
            code: 'E_SCHEDULER_UNAVAILABLE',
            message: `squeue listed no job at all while sacct says Slurm job 77 is ${state}: contradicting answers, taken as a failed query`,
          },
        });
      }
    }
    // A finished record beside the empty squeue is no contradiction: the job ended.
    expect(
      reconcile(job('77', 'yonder-x', 'running'), {
        queueEmpty: true,
        accounting: sacct('77|77|yonder-x|COMPLETED|0:0|\n'),
        files: exited(0),
      }),
    ).toMatchObject({ kind: 'found', state: 'succeeded' });
  });

  it('keeps REVOKED open: unknown while squeue lists it, absent (not cancelled) once only sacct has it', () => {
    const revoked = new Map([
      [
        '78',
        {
          ...(queue.get('40') as SqueueRow),
          jobId: '78',
          displayId: '78',
          state: 'REVOKED',
          name: 'yonder-fed',
        },
      ],
    ]);
    expect(observe(job('78', 'yonder-fed'), noAccounting, notStarted, revoked)).toMatchObject({
      kind: 'found',
      state: 'unknown',
      nativeState: 'REVOKED',
    });
    expect(
      observe(
        job('78', 'yonder-fed'),
        sacct('78|78|yonder-fed|REVOKED|0:0|\n'),
        notStarted,
        new Map(),
      ),
    ).toEqual({
      kind: 'absent',
      source: 'sacct',
      detail: 'accounting says REVOKED but squeue no longer lists the job',
    });
  });
});

describe('reconcile: the wrapper’s own evidence', () => {
  const gone = new Map<string, SqueueRow>();
  const stale = sacct('50|50|yonder-ok|RUNNING|0:0|\n');

  it('a run that exited 0 succeeded, whatever sacct says or fails to say', () => {
    for (const answer of [noAccounting, stale, unreachable, accounting]) {
      expect(observe(job('50', 'yonder-ok', 'running'), answer, exited(0), gone)).toEqual({
        kind: 'found',
        state: 'succeeded',
        nativeState: 'exited 0',
        exitCode: 0,
        source: 'exit-code-file',
      });
    }
  });

  it('a requeued job waiting for its next run is pending, whatever exit code its last run left', () => {
    // Recorded here: right after `scontrol requeue`, sacct says REQUEUED, then PENDING; the
    // first run's wrapper recorded 143 (the requeue's TERM). squeue lists nothing this moment.
    for (const state of ['REQUEUED', 'PENDING'])
      expect(
        observe(
          job('50', 'yonder-ok', 'running'),
          sacct(`50|50|yonder-ok|${state}|0:0|\n`),
          exited(143),
          gone,
        ),
      ).toMatchObject({ kind: 'found', state: 'pending', source: 'sacct' });
  });

  it('a run that exited non-zero failed with its exact code; sacct adds only why', () => {
    expect(observe(job('50', 'yonder-ok', 'running'), stale, exited(3), gone)).toMatchObject({
      state: 'failed',
      exitCode: 3,
      reason: 'exit code 3',
      source: 'exit-code-file',
    });
    // sacct shows 137 as 9 (up to 25.05); the file has the real status.
    expect(observe(job('36', 'yf-exit137'), accounting, exited(137), gone)).toMatchObject({
      state: 'failed',
      nativeState: 'FAILED',
      exitCode: 137,
      // A status of 137 is an `exit 137` as much as a SIGKILL: no signal is claimed.
      signal: null,
      reason: 'exit code 137 (or killed by SIGKILL)',
      source: 'sacct',
    });
    // The wrapper saw its job die of the TERM Slurm sends at the time limit: still a timeout.
    expect(observe(job('46', 'yf-timeout'), accounting, exited(143), gone)).toMatchObject({
      state: 'failed',
      exitCode: 143,
      reason: 'timeout',
      source: 'sacct',
    });
    expect(observe(job('41', 'yf-cancel-running'), accounting, exited(143), gone)).toMatchObject({
      state: 'cancelled',
      reason: 'cancelled by uid 2000',
    });
  });

  it('no accounting record for a job that started or was running is implausible: a failed query', () => {
    for (const [target, files] of [
      [job('50', 'yonder-ok', 'pending'), started],
      [job('50', 'yonder-ok', 'running'), notStarted],
    ] as const) {
      expect(observe(target, noAccounting, files, gone)).toMatchObject({
        kind: 'query-failed',
        source: 'sacct',
        error: {
          code: 'E_SCHEDULER_UNAVAILABLE',
          message: expect.stringContaining('an implausible answer'),
        },
      });
    }
  });

  it('unreadable job files leave the job undecided unless a terminal record decides', () => {
    const unreadable: QueryFailure = { error: { code: 'E_TRANSPORT', message: 'cannot read' } };
    expect(observe(job('999', 'yonder-gone'), accounting, unreadable, gone)).toEqual({
      kind: 'query-failed',
      source: 'job-directory',
      error: unreadable.error,
    });
    expect(observe(job('35', 'yf-exit3'), accounting, unreadable, gone)).toMatchObject({
      state: 'failed',
      exitCode: null,
      reason: `exit code 3 or 131 ${REDUCED}`,
      source: 'sacct',
    });
  });
});

describe('reconcile: the job’s own times and whether it ended on its own', () => {
  const timedQueue = queueMap(parseSqueue(fixture('squeue-times.txt')));
  const timedAccounting = {
    rows: new Map(parseSacct(fixture('sacct-times.txt')).map((row) => [row.jobId, row])),
  };
  const timed = (target: BackendJobV1, files: SlurmEvidence['files'] = notStarted) =>
    observe(target, timedAccounting, files, timedQueue);

  it('a finished job starts and ends when sacct says, to the second, and ended on its own', () => {
    expect(timed(job('1213', 'yt2-exit3', 'running'))).toMatchObject({
      state: 'failed',
      exitCode: null,
      startedAt: '2026-12-01T14:10:04.000Z',
      endedAt: '2026-12-01T14:10:05.000Z',
      endedOnItsOwn: true,
    });
  });

  it('the wrapper’s recorded end (sub-second) is preferred over sacct’s End', () => {
    const files: WrapperFiles = {
      ...exited(0),
      startedAt: '2026-12-01T14:10:04.120Z',
      endedAt: '2026-12-01T14:10:04.380Z',
    };
    expect(timed(job('1212', 'yt2-completed', 'running'), files)).toMatchObject({
      state: 'succeeded',
      source: 'sacct',
      startedAt: '2026-12-01T14:10:04.000Z',
      endedAt: '2026-12-01T14:10:04.380Z',
      endedOnItsOwn: true,
    });
  });

  it('a job cancelled while pending has neither start (squeue’s StartTime is the cancel) nor own end', () => {
    const observation = timed(job('1216', 'yt2-cancel-running', 'pending'));
    expect(observation).toMatchObject({ state: 'cancelled', endedAt: '2026-12-01T14:10:07.000Z' });
    expect(observation).not.toHaveProperty('startedAt');
    expect(observation).not.toHaveProperty('endedOnItsOwn');
  });

  it('a job Slurm cancelled whose wrapper recorded exit 0 is left for the manager to weigh by the end time', () => {
    const files: WrapperFiles = { ...exited(0), endedAt: '2026-12-01T14:10:06.900Z' };
    const observation = timed(job('1216', 'yt2-cancel-running', 'running'), files);
    expect(observation).toMatchObject({
      state: 'succeeded',
      source: 'exit-code-file',
      endedAt: '2026-12-01T14:10:06.900Z',
    });
    expect(observation).not.toHaveProperty('endedOnItsOwn');
  });
});
