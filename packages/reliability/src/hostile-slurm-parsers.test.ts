/**
 * Reliability suite, part 4b: hostile scheduler output. Property tests of the Slurm output
 * parsers (squeue, sacct, sbatch), of the reconciliation of an interrupted submit, and of the
 * job names and sbatch options yonder writes: hostile fields are read back whole, malformed
 * or malicious ids never become rows, and nothing yonder emits is more than one safe word.
 */
import {
  parseSacct,
  parseSbatchId,
  parseSqueue,
  reconcile,
  type SacctRow,
  type SqueueRow,
  sbatchOptions,
  slurmJobName,
} from '@yonder/backend-slurm';
import type { BackendJobV1 } from '@yonder/core';
import { validateResources } from '@yonder/core/backend-kit';
import { hostileString } from '@yonder/test-helpers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hostileRun } from './hostile.js';

/** Only text here: nothing is run, so the canary commands are never near a shell. */
const CANARY = '/nonexistent/CANARY';
const suite = hostileRun('Slurm parsers', 'parsers');

describe('Slurm output parsers (properties)', () => {
  const field = hostileString(CANARY, { lineBreaks: false, maxParts: 4 }).map((value) =>
    value.replaceAll('|', '¦'),
  );
  const jobId = fc.integer({ min: 1, max: 2 ** 31 }).map(String);
  const malicious = fc.constantFrom(
    '1; touch /tmp/x',
    '-rf',
    '$(id)',
    '`id`',
    '1 2',
    '',
    '12a',
    '0x10',
    ' 7',
    '1\u00a0',
  );

  it('parseSqueue reads back every field of well-formed rows; skips malformed and malicious ids', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({
            jobId,
            displayId: field,
            state: field,
            name: field,
            startTime: field,
            comment: hostileString(CANARY, { lineBreaks: false, maxParts: 4 }),
            reason: field,
          }),
          { maxLength: 6, selector: (row) => row.jobId },
        ),
        fc.array(fc.tuple(malicious, field), { maxLength: 3 }),
        (rows, evil) => {
          suite.count('squeue-outputs');
          const text = [
            ...rows.map((r) =>
              [r.jobId, r.displayId, r.state, r.name, r.startTime, r.comment, r.reason].join('|'),
            ),
            ...evil.map(([id, rest]) => `${id}|${id}|RUNNING|${rest}|N/A|c|None`),
          ].join('\n');
          const parsed = parseSqueue(text);
          for (const row of parsed) expect(row.jobId).toMatch(/^\d+$/);
          // A malicious id never becomes a row.
          for (const [id] of evil)
            if (!/^\d+$/.test(id)) expect(parsed.map((r) => r.jobId)).not.toContain(id);
          // Every well-formed row comes back with its fields.
          for (const r of rows) {
            const row = parsed.find((p) => p.jobId === r.jobId && p.name === r.name);
            expect(row, JSON.stringify(r)).toBeDefined();
            expect(row?.state).toBe(r.state);
            expect(row?.reason).toBe(r.reason);
            expect(row?.startTime).toBe(r.startTime);
            expect(row?.comment).toBe(r.comment === '(null)' ? '' : r.comment);
          }
        },
      ),
      { numRuns: 300 },
    );
    // Arbitrary text never throws.
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        suite.count('squeue-outputs');
        for (const row of parseSqueue(text)) expect(row.jobId).toMatch(/^\d+$/);
        for (const row of parseSacct(text)) expect(row.jobId).toMatch(/^\d+$/);
      }),
      { numRuns: 300 },
    );
  });

  it('parseSacct keeps the comment (which may hold "|") whole; malicious ids never become rows', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({
            jobId,
            displayId: field,
            name: field,
            state: field,
            exitCode: field,
            start: field,
            end: field,
            comment: hostileString(CANARY, { lineBreaks: false, maxParts: 4 }),
          }),
          { maxLength: 6, selector: (row) => row.jobId },
        ),
        malicious,
        (rows, evil) => {
          suite.count('sacct-outputs');
          const text = [
            `${evil}|${evil}|x|COMPLETED|0:0|None|None|c`,
            ...rows.map((r) =>
              [r.jobId, r.displayId, r.name, r.state, r.exitCode, r.start, r.end, r.comment].join(
                '|',
              ),
            ),
          ].join('\n');
          const parsed = parseSacct(text);
          if (!/^\d+$/.test(evil)) expect(parsed.map((r) => r.jobId)).not.toContain(evil);
          for (const r of rows) {
            const row = parsed.find(
              (p) => p.jobId === r.jobId && p.name === r.name && p.comment === r.comment,
            );
            expect(row, JSON.stringify(r)).toBeDefined();
            expect(row?.exitCode).toBe(r.exitCode);
            expect([row?.start, row?.end]).toEqual([r.start, r.end]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('parseSbatchId accepts only a numeric id line; injected lines never become the id', () => {
    for (const text of [
      '1; touch /tmp/x',
      '-rf',
      '$(id)',
      '`id`',
      '12 34',
      'Submitted batch job 5',
      '',
    ]) {
      suite.count('sbatch-outputs');
      expect(parseSbatchId(text)).toBeNull();
    }
    expect(parseSbatchId('123\n$(id)')).toEqual({ id: '123', cluster: null });
    expect(parseSbatchId('sbatch: warning: x\n77;cluster\n')).toEqual({
      id: '77',
      cluster: 'cluster',
    });
    fc.assert(
      fc.property(fc.array(hostileString(CANARY), { maxLength: 5 }), (lines) => {
        suite.count('sbatch-outputs');
        const answer = parseSbatchId(lines.join('\n'));
        if (answer) {
          expect(answer.id).toMatch(/^\d+$/);
          if (answer.cluster !== null) expect(answer.cluster).not.toMatch(/\s/);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reconcile never takes a row whose name is not the job’s for the job (property)', () => {
    const job = (id: string, name: string): BackendJobV1 => ({
      id: 'aaaaaaaaaaaa',
      name: 'x',
      externalId: id,
      state: 'running',
      createdAt: new Date().toISOString(),
      cancelRequested: false,
      profile: { name: 'hpc', backend: 'slurm' },
      options: {},
      data: { jobName: name, jobDir: '/tmp/x', log: '/tmp/x/job.log', marker: 'm', cluster: null },
    });
    const states = fc.constantFrom(
      'RUNNING',
      'PENDING',
      'COMPLETED',
      'FAILED',
      'CANCELLED',
      'TIMEOUT',
      'BOGUS',
    );
    fc.assert(
      fc.property(
        jobId,
        field,
        fc.option(fc.tuple(field, states), { nil: undefined }),
        fc.option(fc.tuple(field, states, fc.constantFrom('0:0', '1:0', '0:9', '$(id)')), {
          nil: null,
        }),
        (id, ourName, queued, accounted) => {
          suite.count('reconciles');
          const queue = new Map<string, SqueueRow>();
          if (queued)
            queue.set(id, {
              jobId: id,
              displayId: id,
              state: queued[1],
              name: queued[0],
              comment: '',
              reason: 'None',
            });
          const accounting = new Map<string, SacctRow>();
          if (accounted)
            accounting.set(id, {
              jobId: id,
              displayId: id,
              name: accounted[0],
              state: accounted[1],
              exitCode: accounted[2],
              comment: '',
            });
          const observation = reconcile(job(id, ourName), {
            queued: queue.get(id),
            accounting:
              accounted === null
                ? { error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'sacct failed' } }
                : { rows: accounting },
            files: { run: 0, started: false, exitCode: null },
          });
          if (observation.kind === 'found') {
            const fromQueue = queued && queued[0] === ourName;
            const fromAccounting = accounted && accounted[0] === ourName;
            expect(fromQueue || fromAccounting).toBe(true);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('Slurm job names and sbatch options stay single, safe words', () => {
    fc.assert(
      fc.property(hostileString(CANARY), (name) => {
        suite.count('slurm-names');
        expect(slurmJobName('0123456789ab', name)).toMatch(
          /^yonder-0123456789ab(-[A-Za-z0-9_.-]{1,40})?$/,
        );
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(
        fc.record(
          {
            time: hostileString(CANARY, { maxParts: 2 }),
            memory: hostileString(CANARY, { maxParts: 2 }),
            partition: hostileString(CANARY, { maxParts: 2 }),
            account: hostileString(CANARY, { maxParts: 2 }),
            qos: hostileString(CANARY, { maxParts: 2 }),
          },
          { requiredKeys: [] },
        ),
        (resources) => {
          suite.count('slurm-resources');
          if (validateResources(resources).length > 0) return;
          const options = sbatchOptions(
            {
              id: '0123456789ab',
              name: 'n',
              marker: 'yonder:0123456789ab',
              createdAt: '2026-01-01T00:00:00Z',
              argv: ['true'],
              env: {},
              secrets: {},
              resources,
              schedulerOptions: [],
              profile: { name: 'hpc', backend: 'slurm' },
            },
            'yonder-0123456789ab',
            {},
          );
          for (const option of options) {
            expect(option).toMatch(/^--[a-z-]+(=|$)/);
            expect(option).not.toMatch(/[\s'"`$;|&<>\\]/);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
