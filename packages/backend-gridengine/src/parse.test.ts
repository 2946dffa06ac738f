import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseResolveOutput, reconcile } from './gridengine-poll.js';
import {
  inErrorState,
  parseErrorReasons,
  parseGridEngineVersion,
  parseQacct,
  parseQstatXml,
  parseQsubId,
  qacctObservation,
  qacctTime,
  qmasterUnreachable,
  qstatObservation,
} from './parse.js';

/** An output recorded from the real daemons (see __fixtures__/README.md). */
const fixture = (name: string) =>
  readFileSync(join(import.meta.dirname, '__fixtures__', name), 'utf8');

describe('qstat -xml', () => {
  it('reads running, pending, held and error-state jobs', () => {
    const rows = parseQstatXml(fixture('qstat-mixed.xml'));
    expect(rows.map((row) => [row.jobId, row.name, row.state])).toEqual([
      ['7', 'hrt', 'r'],
      ['8', 'qdelrun', 'r'],
      ['9', 'eqw', 'qw'],
      ['10', 'held', 'hqw'],
    ]);
    expect(rows[0]).toMatchObject({ owner: 'root', startTime: '2026-12-07T16:34:19' });
    expect(qstatObservation(rows[0] as never)).toMatchObject({
      state: 'running',
      nativeState: 'r',
    });
    expect(qstatObservation(rows[3] as never)).toMatchObject({ state: 'pending', reason: 'held' });
    const eqw = parseQstatXml(fixture('qstat-eqw-only.xml'));
    expect(eqw.map((row) => [row.jobId, row.state, inErrorState(row)])).toEqual([
      ['9', 'Eqw', true],
    ]);
  });

  it('reads an empty list, and refuses what is not qstat’s XML', () => {
    expect(parseQstatXml(fixture('qstat-empty.xml'))).toEqual([]);
    expect(() =>
      parseQstatXml('error: commlib error: got select error (Connection refused)'),
    ).toThrow(/not a qstat -xml answer/);
  });

  it('reads the reason of a job in error state without its time stamp, entities decoded', () => {
    expect(parseErrorReasons(fixture('qstat-j-eqw.xml'))).toEqual([
      "can't chdir to /nonexistent-dir: No such file or directory",
    ]);
  });

  it('unescapes entities in names', () => {
    const xml =
      '<job_info><job_list state="running"><JB_job_number>4</JB_job_number><JB_name>a&amp;b&lt;&#233;</JB_name><state>r</state></job_list></job_info>';
    expect(parseQstatXml(xml)[0]?.name).toBe('a&b<é');
  });
});

describe('qacct -j', () => {
  it('tells whose failure it was: exit 3, killed, h_rt, qdel of a running job', () => {
    const [exit3] = parseQacct(fixture('qacct-exit3.txt'));
    expect(exit3).toMatchObject({ jobId: '5', name: 'exit3', failed: 0, exitStatus: 3 });
    expect(qacctObservation(exit3 as never)).toMatchObject({
      state: 'failed',
      exitCode: 3,
      signal: null,
      failureKind: 'application',
      nativeState: 'failed 0, exit_status 3',
    });
    const [killed] = parseQacct(fixture('qacct-killed.txt'));
    expect(qacctObservation(killed as never)).toMatchObject({
      state: 'failed',
      exitCode: 137,
      signal: 'SIGKILL',
      nativeState: 'failed 100 : assumedly after job, exit_status 137',
    });
    expect(qacctObservation(killed as never).endedOnItsOwn).toBeUndefined();
    const [limit] = parseQacct(fixture('qacct-h_rt.txt'));
    expect(qacctObservation(limit as never)).toMatchObject({
      state: 'failed',
      reason: 'timeout',
      failureKind: 'application',
      endedOnItsOwn: true,
    });
    const [deleted] = parseQacct(fixture('qacct-qdel-running.txt'));
    expect(qacctObservation(deleted as never)).toMatchObject({
      state: 'failed',
      signal: 'SIGKILL',
    });
  });

  it('a job Grid Engine could not start is the submitter’s failure', () => {
    const record = {
      ...parseQacct(fixture('qacct-exit3.txt'))[0],
      failed: 28,
      failedText: 'changing into working directory',
      exitStatus: 0,
    };
    expect(qacctObservation(record as never)).toMatchObject({
      state: 'failed',
      failureKind: 'submission',
      reason: 'changing into working directory',
    });
  });

  it('reads its times in UTC, in whole seconds', () => {
    const [record] = parseQacct(fixture('qacct-exit3.txt'));
    expect(qacctTime(record?.startTime)).toBe('2026-12-07T16:34:18.000Z');
    expect(qacctTime(record?.endTime)).toBe('2026-12-07T16:34:18.000Z');
    expect(qacctTime('undefined')).toBeUndefined();
  });
});

describe('the poll’s second look', () => {
  const job = {
    id: 'j1',
    externalId: '5',
    state: 'running',
    createdAt: '2026-12-07T16:34:00Z',
    data: { jobName: 'exit3', jobDir: '/w/j\t1' },
  } as never;

  it('parses qacct’s answer and the exit codes, a tab in a directory included', () => {
    const out = `QACCT 5 0\n${fixture('qacct-exit3.txt')
      .split('\n')
      .map((line) => `OUT 5 ${line}`)
      .join(
        '\n',
      )}\nQACCT 6 1\nERR 6 ${fixture('qacct-not-found.stderr.txt').trim()}\nEXIT /w/j\t1\t3\t1796661259.5\t1796661260.25\n`;
    const answer = parseResolveOutput(out);
    expect(answer.qacct.get('6')).toMatchObject({ status: 1, err: 'error: job id 10 not found\n' });
    expect(answer.ends.get('/w/j\t1')).toMatchObject({
      exitCode: 3,
      endedAt: '2026-12-07T16:34:20.250Z',
    });
    expect(parseQacct(answer.qacct.get('5')?.out ?? '')).toHaveLength(1);
  });

  it('missing from qstat and qacct: finished if its exit-code file says so, else absent', () => {
    expect(reconcile(job, { accounting: [], end: { exitCode: 3 } })).toMatchObject({
      kind: 'found',
      state: 'failed',
      exitCode: 3,
      source: 'exit-code-file',
    });
    expect(reconcile(job, { accounting: [] })).toMatchObject({ kind: 'absent' });
  });

  it('a failed qacct changes nothing unless the wrapper recorded the end', () => {
    expect(
      reconcile(job, { accounting: { error: 'qacct: unable to open accounting file' } }),
    ).toMatchObject({
      kind: 'query-failed',
    });
    expect(reconcile(job, { accounting: { error: 'x' }, end: { exitCode: 0 } })).toMatchObject({
      kind: 'found',
      state: 'succeeded',
    });
  });

  it('a record of another name is not this job', () => {
    const [record] = parseQacct(fixture('qacct-killed.txt'));
    expect(reconcile(job, { accounting: [record as never] })).toMatchObject({
      kind: 'absent',
      detail: expect.stringContaining('is named killed, not exit3'),
    });
  });
});

describe('qsub, version', () => {
  it('tells a qmaster that cannot be reached from a refusal', () => {
    expect(qmasterUnreachable(fixture('qsub-qmaster-down.stderr.txt'))).toBe(true);
    expect(qmasterUnreachable(fixture('qstat-qmaster-down.stderr.txt'))).toBe(true);
    expect(
      qmasterUnreachable(
        'Unable to run job: Job was rejected because job requests unknown queue "nosuch".',
      ),
    ).toBe(false);
  });

  it('reads the id of qsub -terse, an array’s too', () => {
    expect(parseQsubId('12\n')).toBe('12');
    expect(parseQsubId('10.1-3:1\n')).toBe('10');
    expect(parseQsubId('Your job 12 ("x") has been submitted\n')).toBeNull();
  });

  it('reads the version line of qstat -help', () => {
    expect(parseGridEngineVersion(fixture('qstat-help-version.txt'))).toBe('SGE 8.1.9');
    expect(parseGridEngineVersion('usage: qstat [options]')).toBeNull();
  });
});

describe('a record and the wrapper’s exit code together', () => {
  const job = {
    id: 'j2',
    externalId: '8',
    state: 'running',
    createdAt: '2026-12-07T16:34:00Z',
    data: { jobName: 'qdelrun', jobDir: '/w/j2' },
  } as never;
  const [killed] = parseQacct(fixture('qacct-qdel-running.txt'));

  it('a qdel that came after the job had ended on its own: the wrapper’s status, no claim that it ended on its own', () => {
    const seen = reconcile(job, {
      accounting: [killed as never],
      end: { exitCode: 0, endedAt: '2026-12-07T16:34:20.100Z' },
    });
    expect(seen).toMatchObject({
      kind: 'found',
      state: 'succeeded',
      exitCode: 0,
      endedAt: '2026-12-07T16:34:20.100Z',
    });
    expect((seen as { endedOnItsOwn?: boolean }).endedOnItsOwn).toBeUndefined();
  });

  it('killed by qdel with no end recorded: Grid Engine’s kill, at the second qacct recorded', () => {
    expect(reconcile(job, { accounting: [killed as never] })).toMatchObject({
      kind: 'found',
      state: 'failed',
      signal: 'SIGKILL',
      endedAt: '2026-12-07T16:34:22.000Z',
    });
  });
});
