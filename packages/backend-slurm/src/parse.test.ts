import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  isTransientSbatchFailure,
  parseConfigValue,
  parseExitCode,
  parseMinJobAge,
  parseSacct,
  parseSbatchId,
  parseSlurmVersion,
  parseSqueue,
  SACCT_FIELDS_WITHOUT_TIMES,
  SQUEUE_FIELDS_WITHOUT_TIMES,
  sbatchFailure,
  slurmObservation,
  slurmTime,
} from './parse.js';

/** A recorded output (see __fixtures__/README.md for the commands). */
function fixture(name: string): string {
  return readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');
}

const squeueText = fixture('squeue-yonder.txt');
const sacctText = fixture('sacct-yonder.txt');

describe('parseSqueue', () => {
  const rows = parseSqueue(squeueText, SQUEUE_FIELDS_WITHOUT_TIMES);

  it('parses every row of the recorded squeue output', () => {
    expect(squeueText.trim().split('\n')).toHaveLength(13);
    expect(rows).toHaveLength(13);
    expect(rows.map((row) => row.displayId)).toEqual([
      '41',
      '43',
      '34',
      '38',
      '39',
      '35',
      '36',
      '37',
      '44_1',
      '44_2',
      '44_3',
      '42',
      '40',
    ]);
  });

  it.each([
    ['41', '41', 'CANCELLED', 'yf-cancel-running', '', 'None'],
    ['43', '43', 'CANCELLED', 'yf-cancel-pending', '', 'JobHeldUser'],
    ['34', '34', 'COMPLETED', 'yf-completed', '', 'None'],
    ['39', '39', 'COMPLETED', 'yf name with spaces', '', 'None'],
    ['35', '35', 'FAILED', 'yf-exit3', '', 'NonZeroExitCode'],
    ['36', '36', 'FAILED', 'yf-exit137', '', 'NonZeroExitCode'],
    ['37', '37', 'FAILED', 'yf-sigkill', '', 'JobLaunchFailure'],
    ['44', '44_1', 'PENDING', 'yf-array', '', 'JobHeldUser'],
    ['44', '44_2', 'PENDING', 'yf-array', '', 'JobHeldUser'],
    ['44', '44_3', 'PENDING', 'yf-array', '', 'JobHeldUser'],
    ['42', '42', 'PENDING', 'yf-held', '', 'JobHeldUser'],
    ['40', '40', 'RUNNING', 'yf-running', '', 'None'],
  ])('row %s (%s): %s %s', (jobId, displayId, state, name, comment, reason) => {
    expect(rows.find((row) => row.displayId === displayId)).toEqual({
      jobId,
      displayId,
      state,
      name,
      comment,
      reason,
    });
  });

  it('turns the `(null)` comment into an empty string', () => {
    expect(squeueText).toContain('|(null)|');
    expect(rows.filter((row) => row.displayId !== '38').every((row) => row.comment === '')).toBe(
      true,
    );
  });

  it('keeps a name with spaces whole', () => {
    expect(rows.find((row) => row.jobId === '39')?.name).toBe('yf name with spaces');
  });

  it('gives array tasks the array job id as jobId', () => {
    expect(rows.filter((row) => row.jobId === '44').map((row) => row.displayId)).toEqual([
      '44_1',
      '44_2',
      '44_3',
    ]);
  });

  it('reads the job fields of a row whose comment has a `|` correctly', () => {
    const row = rows.find((candidate) => candidate.displayId === '38');
    expect(row).toMatchObject({ jobId: '38', state: 'COMPLETED', name: 'yf-comment' });
  });

  it('keeps a comment with `|` whole and takes the reason from the last field', () => {
    expect(squeueText).toContain('38|38|COMPLETED|yf-comment|yf c|with pipe and spaces|None\n');
    expect(rows.find((row) => row.displayId === '38')).toMatchObject({
      comment: 'yf c|with pipe and spaces',
      reason: 'None',
    });
  });

  it('returns no rows for the recorded empty output', () => {
    expect(fixture('squeue-empty.txt')).toBe('');
    expect(parseSqueue(fixture('squeue-empty.txt'), SQUEUE_FIELDS_WITHOUT_TIMES)).toEqual([]);
  });

  it('skips headers, short lines, error text and non-numeric ids, and tolerates \\r', () => {
    const text = [
      'JOBID|JOBID|STATE|NAME|COMMENT|REASON',
      '',
      'garbage',
      '12|12|RUNNING|x',
      'x1|x1|RUNNING|n|(null)|None',
      '7|7|PENDING|n|(null)|Priority\r',
      fixture('squeue-unreachable.stderr.txt'),
    ].join('\n');
    expect(parseSqueue(text, SQUEUE_FIELDS_WITHOUT_TIMES)).toEqual([
      { jobId: '7', displayId: '7', state: 'PENDING', name: 'n', comment: '', reason: 'Priority' },
    ]);
  });
});

describe('parseSacct', () => {
  const rows = parseSacct(sacctText, SACCT_FIELDS_WITHOUT_TIMES);

  it('parses every row of the recorded sacct output', () => {
    expect(sacctText.trim().split('\n')).toHaveLength(12);
    expect(
      rows.map((row) => [row.jobId, row.displayId, row.name, row.state, row.exitCode]),
    ).toEqual([
      ['34', '34', 'yf-completed', 'COMPLETED', '0:0'],
      ['35', '35', 'yf-exit3', 'FAILED', '3:0'],
      ['36', '36', 'yf-exit137', 'FAILED', '9:0'],
      ['37', '37', 'yf-sigkill', 'FAILED', '0:9'],
      ['38', '38', 'yf-comment', 'COMPLETED', '0:0'],
      ['39', '39', 'yf name with spaces', 'COMPLETED', '0:0'],
      ['40', '40', 'yf-running', 'COMPLETED', '0:0'],
      ['41', '41', 'yf-cancel-running', 'CANCELLED by 2000', '0:0'],
      ['42', '42', 'yf-held', 'CANCELLED by 2000', '0:0'],
      ['43', '43', 'yf-cancel-pending', 'CANCELLED by 2000', '0:0'],
      ['44', '44_[1-3]', 'yf-array', 'CANCELLED by 2000', '0:0'],
      ['46', '46', 'yf-timeout', 'TIMEOUT', '0:0'],
    ]);
  });

  it('keeps a comment with `|` whole (the comment is the last field)', () => {
    expect(rows.find((row) => row.jobId === '38')?.comment).toBe('yf c|with pipe and spaces');
    expect(rows.filter((row) => row.jobId !== '38').every((row) => row.comment === '')).toBe(true);
  });

  it('returns no rows for empty output or an error message', () => {
    expect(parseSacct('')).toEqual([]);
    expect(parseSacct(fixture('sacct-unreachable.stderr.txt'))).toEqual([]);
  });

  it('skips malformed lines and tolerates \\r', () => {
    expect(
      parseSacct(
        'JobIDRaw|JobID|JobName|State|ExitCode|Comment\n5|5|n|FAILED\n6|6|n|FAILED|1:0|\r\n',
        SACCT_FIELDS_WITHOUT_TIMES,
      ),
    ).toEqual([
      { jobId: '6', displayId: '6', name: 'n', state: 'FAILED', exitCode: '1:0', comment: '' },
    ]);
  });
});

describe('parseSlurmVersion', () => {
  it('reads the recorded `sbatch --version` (Debian)', () => {
    expect(parseSlurmVersion(fixture('sbatch-version.txt'))).toEqual({
      major: 22,
      minor: 5,
      patch: 8,
      text: '22.05.8',
    });
  });

  it.each([
    ['slurm-wlm 22.05.8', { major: 22, minor: 5, patch: 8, text: '22.05.8' }],
    ['slurm 23.11.4\n', { major: 23, minor: 11, patch: 4, text: '23.11.4' }],
    ['slurm 24.05', { major: 24, minor: 5, patch: 0, text: '24.05' }],
  ])('%j', (text, expected) => {
    expect(parseSlurmVersion(text)).toEqual(expected);
  });

  it.each(['', 'garbage', 'sbatch: command not found', 'slurm', 'slurm x.y'])(
    '%j is null',
    (text) => {
      expect(parseSlurmVersion(text)).toBeNull();
    },
  );
});

describe('parseMinJobAge / parseConfigValue', () => {
  it('reads the recorded `scontrol show config` line', () => {
    expect(parseMinJobAge(fixture('scontrol-show-config-minjobage.txt'))).toBe(30);
  });

  it('finds the key among other lines, case-insensitively', () => {
    const text =
      'Configuration data as of 2026-11-30T05:00:00\nMaxJobCount = 10000\nminjobage = 2 sec\n';
    expect(parseMinJobAge(text)).toBe(2);
    expect(parseConfigValue(text, 'MaxJobCount')).toBe('10000');
  });

  it('is null when missing or not a number', () => {
    expect(parseMinJobAge('')).toBeNull();
    expect(parseMinJobAge('MaxJobCount = 10000')).toBeNull();
    expect(parseMinJobAge('MinJobAge = (null)')).toBeNull();
    expect(parseMinJobAge('MinJobAge =')).toBeNull();
  });
});

describe('parseSbatchId', () => {
  it.each([
    ['123', { id: '123', cluster: null }],
    ['123\n', { id: '123', cluster: null }],
    ['123;cluster', { id: '123', cluster: 'cluster' }],
    ['123;yonder\r\n', { id: '123', cluster: 'yonder' }],
    [
      'sbatch: info: some informational line\nWARNING: 42 things\n456\n',
      { id: '456', cluster: null },
    ],
  ])('%j', (text, expected) => {
    expect(parseSbatchId(text)).toEqual(expected);
  });

  it.each(['', 'garbage', 'Submitted batch job 123', '12a', '123;', '-1'])('%j is null', (text) => {
    expect(parseSbatchId(text)).toBeNull();
  });
});

describe('sbatchFailure', () => {
  it('keeps both lines of the recorded bad-partition rejection', () => {
    expect(sbatchFailure(fixture('sbatch-bad-partition.stderr.txt'))).toBe(
      'sbatch: error: invalid partition specified: nosuch; sbatch: error: Batch job submission failed: Invalid partition name specified',
    );
  });

  it('reads the recorded unreachable-controller failure', () => {
    expect(sbatchFailure(fixture('sbatch-unreachable.stderr.txt'))).toBe(
      'sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)',
    );
  });

  it('drops retry notices and says so when there is no message', () => {
    expect(
      sbatchFailure(
        'sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\nsbatch: error: Batch job submission failed: Invalid qos specification\n',
      ),
    ).toBe('sbatch: error: Batch job submission failed: Invalid qos specification');
    expect(sbatchFailure('')).toBe('sbatch failed without a message');
    expect(sbatchFailure('x'.repeat(2000))).toHaveLength(1200);
  });
});

describe('isTransientSbatchFailure', () => {
  it('classifies the recorded failures', () => {
    expect(isTransientSbatchFailure(fixture('sbatch-unreachable.stderr.txt'))).toBe(true);
    expect(isTransientSbatchFailure(fixture('sbatch-bad-partition.stderr.txt'))).toBe(false);
  });

  it.each([
    'sbatch: error: Batch job submission failed: Socket timed out on send/recv operation',
    'sbatch: error: Batch job submission failed: Slurm temporarily unable to accept job',
    'sbatch: error: Batch job submission failed: Job creation temporarily disabled',
    'sbatch: error: Batch job submission failed: Rate limit exceeded, please try again later',
    'sbatch: error: Batch job submission failed: Unable to create job record, try again',
    'sbatch: error: Batch job submission failed: Requested nodes are busy',
  ])('transient: %s', (stderr) => {
    expect(isTransientSbatchFailure(stderr)).toBe(true);
  });

  it.each([
    'sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified',
    'sbatch: error: Batch job submission failed: Requested node configuration is not available',
    "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
    '',
  ])('permanent: %j', (stderr) => {
    expect(isTransientSbatchFailure(stderr)).toBe(false);
  });
});

describe('parseExitCode', () => {
  it.each([
    ['3:0', { exitCode: 3, signal: null }],
    ['0:0', { exitCode: 0, signal: null }],
    ['9:0', { exitCode: 9, signal: null }],
    ['0:9', { exitCode: 0, signal: 'SIGKILL' }],
    ['0:15', { exitCode: 0, signal: 'SIGTERM' }],
    [' 1:0\n', { exitCode: 1, signal: null }],
    ['0:53', { exitCode: 0, signal: 'SIGRTMIN+19' }],
    ['0:6', { exitCode: 0, signal: 'SIGABRT' }],
  ])('%j', (text, expected) => {
    expect(parseExitCode(text)).toEqual(expected);
  });

  it.each(['', 'garbage', '3', '-1:0', '3:x', '1:2:3'])('%j has neither', (text) => {
    expect(parseExitCode(text)).toEqual({ exitCode: null, signal: null });
  });
});

describe('slurmObservation', () => {
  // Every (state, reason) pair of squeue-yonder.txt.
  it.each([
    ['CANCELLED', 'None', 'cancelled', null],
    ['CANCELLED', 'JobHeldUser', 'cancelled', null],
    ['COMPLETED', 'None', 'succeeded', null],
    ['FAILED', 'NonZeroExitCode', 'failed', null],
    ['FAILED', 'JobLaunchFailure', 'failed', null],
    ['PENDING', 'JobHeldUser', 'pending', 'JobHeldUser'],
    ['RUNNING', 'None', 'running', null],
  ] as const)('squeue %s / %s', (nativeState, reason, state, expectedReason) => {
    expect(slurmObservation(nativeState, 'squeue', { reason })).toEqual({
      kind: 'found',
      state,
      nativeState,
      exitCode: state === 'succeeded' ? 0 : null,
      signal: null,
      reason: expectedReason,
      failureKind: state === 'failed' ? 'application' : null,
      source: 'squeue',
      ...(state === 'succeeded' || state === 'failed' ? { endedOnItsOwn: true } : {}),
    });
  });

  it('reads every squeue row of the fixture without an unknown state', () => {
    for (const row of parseSqueue(squeueText, SQUEUE_FIELDS_WITHOUT_TIMES))
      expect(slurmObservation(row.state, 'squeue', { reason: row.reason }).state).not.toBe(
        'unknown',
      );
  });

  it('uses the pending reason, except `None`', () => {
    expect(slurmObservation('PENDING', 'squeue', { reason: 'Priority' }).reason).toBe('Priority');
    expect(slurmObservation('PENDING', 'squeue', { reason: 'None' }).reason).toBeNull();
    expect(slurmObservation('PENDING', 'squeue').reason).toBeNull();
    expect(slurmObservation('RUNNING', 'squeue', { reason: 'Priority' }).reason).toBeNull();
  });

  const REDUCED = "(Slurm's accounting shows exit codes of 128 and more reduced by 128)";
  // Every (state, exit code) pair of sacct-yonder.txt, plus the live states of sacct-mixed.txt.
  it.each([
    ['COMPLETED', '0:0', 'succeeded', null, null, 0, null],
    // sacct up to 25.05 shows 131 as 3:0 and 137 as 9:0: both are named, no code is claimed
    // (reconcile takes the exact one from the wrapper's file).
    ['FAILED', '3:0', 'failed', 'application', `exit code 3 or 131 ${REDUCED}`, null, null],
    ['FAILED', '9:0', 'failed', 'application', `exit code 9 or 137 ${REDUCED}`, null, null],
    // A code of 128 or more is shown only by sacct 25.11+, which does not reduce it.
    ['FAILED', '137:0', 'failed', 'application', 'exit code 137', 137, null],
    // A signal death, a timeout or a cancel has no exit status: sacct prints 0, yonder says null.
    ['FAILED', '0:9', 'failed', 'application', 'killed by SIGKILL', null, 'SIGKILL'],
    ['FAILED', '0:15', 'failed', 'application', 'killed by SIGTERM', null, 'SIGTERM'],
    ['FAILED', '0:53', 'failed', 'infrastructure', 'job launch failed (I/O setup)', null, null],
    ['CANCELLED by 2000', '0:0', 'cancelled', null, 'cancelled by uid 2000', null, null],
    ['CANCELLED by 0', '0:0', 'cancelled', null, 'cancelled by uid 0', null, null],
    ['TIMEOUT', '0:0', 'failed', 'application', 'timeout', null, null],
    ['RUNNING', '0:0', 'running', null, null, 0, null],
    ['PENDING', '0:0', 'pending', null, null, 0, null],
  ] as const)(
    'sacct %s %s',
    (nativeState, exitText, state, failureKind, reason, exitCode, signal) => {
      expect(slurmObservation(nativeState, 'sacct', { exitCode: exitText })).toEqual({
        kind: 'found',
        state,
        nativeState,
        exitCode,
        signal,
        reason,
        failureKind,
        source: 'sacct',
        ...(state === 'succeeded' || state === 'failed' ? { endedOnItsOwn: true } : {}),
      });
    },
  );

  it('reads every sacct row of the fixture as a terminal state', () => {
    for (const row of parseSacct(sacctText, SACCT_FIELDS_WITHOUT_TIMES))
      expect(['succeeded', 'failed', 'cancelled']).toContain(
        slurmObservation(row.state, 'sacct', { exitCode: row.exitCode }).state,
      );
  });

  it('gives an exit code of 0 to COMPLETED even without one, and unknown for garbage', () => {
    expect(slurmObservation('COMPLETED', 'squeue').exitCode).toBe(0);
    expect(slurmObservation('FAILED', 'sacct', { exitCode: '' })).toMatchObject({
      state: 'failed',
      exitCode: null,
      signal: null,
      reason: null,
    });
    expect(slurmObservation('WEIRD_STATE', 'squeue').state).toBe('unknown');
    expect(slurmObservation('', 'sacct').state).toBe('unknown');
  });
});

describe('the backend’s layouts with times (recorded squeue-times.txt, sacct-times.txt)', () => {
  it('squeue rows carry StartTime between the name and the comment', () => {
    const rows = parseSqueue(fixture('squeue-times.txt'));
    expect(rows).toHaveLength(7);
    expect(rows.find((row) => row.jobId === '1214')).toEqual({
      jobId: '1214',
      displayId: '1214',
      state: 'RUNNING',
      name: 'yt2-running',
      startTime: '2026-12-01T14:10:07',
      comment: '',
      reason: 'None',
    });
    expect(rows.find((row) => row.jobId === '1207')).toMatchObject({
      comment: 'yonder:bc8a50281d6f',
      reason: 'JobHeldUser',
    });
    expect(rows.find((row) => row.jobId === '1215')?.startTime).toBe('N/A');
  });

  it('sacct rows carry Start and End before the comment', () => {
    const rows = parseSacct(fixture('sacct-times.txt'));
    expect(rows.map((row) => [row.jobId, row.state, row.start, row.end, row.comment])).toEqual([
      ['1212', 'COMPLETED', '2026-12-01T14:10:04', '2026-12-01T14:10:04', ''],
      ['1213', 'FAILED', '2026-12-01T14:10:04', '2026-12-01T14:10:05', ''],
      ['1214', 'RUNNING', '2026-12-01T14:10:07', 'Unknown', ''],
      ['1215', 'PENDING', 'Unknown', 'Unknown', ''],
      ['1216', 'CANCELLED by 2000', 'None', '2026-12-01T14:10:07', ''],
    ]);
    expect(parseSacct('9|9|n|COMPLETED|0:0|2026-12-01T00:00:00|None|a|b|c')[0]?.comment).toBe(
      'a|b|c',
    );
  });

  it('slurmTime reads UTC times and refuses the special words and anything else', () => {
    expect(slurmTime('2026-12-01T14:10:07')).toBe('2026-12-01T14:10:07.000Z');
    for (const word of ['Unknown', 'None', 'N/A', 'INVALID', '', '2026-12-01 14:10:07', '$(id)'])
      expect(slurmTime(word)).toBeUndefined();
    expect(slurmTime(undefined)).toBeUndefined();
  });

  it('Slurm’s own ends are marked as the job’s own; a cancel is not', () => {
    for (const state of ['COMPLETED', 'FAILED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY'])
      expect(slurmObservation(state, 'sacct', { exitCode: '0:0' }).endedOnItsOwn).toBe(true);
    for (const state of ['CANCELLED by 0', 'RUNNING', 'PENDING', 'REVOKED'])
      expect(slurmObservation(state, 'sacct')).not.toHaveProperty('endedOnItsOwn');
  });
});
