/** Tests of the server's job index: paging, sorting, filtering, counts and stale targets. */
import type { JobRecord } from '@yonder/core';
import { sampleJob } from '@yonder/core/conformance';
import { describe, expect, it } from 'vitest';
import { JobIndex } from './job-index.js';
import { parseJobQuery } from './job-query.js';

function jobs(count: number): JobRecord[] {
  return Array.from({ length: count }, (_, index) => {
    const base = sampleJob({ id: index.toString(16).padStart(12, '0') });
    return {
      ...base,
      name: `job-${String(index).padStart(5, '0')}`,
      profile: index % 2 === 0 ? 'even' : 'odd',
      state: index % 3 === 0 ? 'failed' : 'succeeded',
      createdAt: new Date(Date.UTC(2026, 0, 1) + index * 1000).toISOString(),
    };
  });
}

const request = (q: string, extra: Partial<Parameters<JobIndex['page']>[0]> = {}) => ({
  query: parseJobQuery(q),
  sort: 'created' as const,
  descending: true,
  offset: 0,
  limit: 50,
  ...extra,
});

describe('JobIndex', () => {
  it('sorts by how long each job ran from its own start to its own end, not from its submission', () => {
    const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();
    const index = new JobIndex();
    // A batch job's submission is recorded after it started: 12 s of running, submitted at 11.6 s.
    const batch = {
      ...sampleJob({ id: 'aaaaaaaaaaaa' }),
      name: 'batch',
      startedAt: at(0),
      submittedAt: at(11.6),
      finishedAt: at(12),
    };
    // Queued 60 s before it started, then ran 3 s.
    const queued = {
      ...sampleJob({ id: 'bbbbbbbbbbbb' }),
      name: 'queued',
      submittedAt: at(0),
      startedAt: at(60),
      finishedAt: at(63),
    };
    index.reset([batch, queued]);
    const rows = index.page(request('', { sort: 'duration' })).rows;
    expect(rows.map((row) => row.name)).toEqual(['batch', 'queued']);
    expect(rows[0]?.startedAt).toBe(at(0));
  });

  it('pages 10,000 jobs newest first, with counts of the whole ledger', () => {
    const index = new JobIndex();
    index.reset(jobs(10_000));
    const first = index.page(request(''));
    expect(first.total).toBe(10_000);
    expect(first.rows).toHaveLength(50);
    expect(first.rows[0]?.name).toBe('job-09999');
    expect(first.states).toEqual({ failed: 3334, succeeded: 6666 });
    expect(first.profiles).toEqual(['even', 'odd']);
    const last = index.page(request('', { offset: 9_990 }));
    expect(last.rows.map((row) => row.name)).toHaveLength(10);
    // Past the end: the last page, not an empty one.
    expect(index.page(request('', { offset: 20_000 })).offset).toBe(9_950);
  });

  it('filters with negation and sorts by the column asked for', () => {
    const index = new JobIndex();
    index.reset(jobs(30));
    const page = index.page(
      request('-state:failed profile:even', { sort: 'name', descending: false }),
    );
    expect(page.rows.every((row) => row.state !== 'failed' && row.profile === 'even')).toBe(true);
    const names = page.rows.map((row) => row.name);
    expect(names).toEqual([...names].sort());
    expect(page.total).toBe(10);
  });

  it('keeps rows current and names targets whose active jobs recorded a failed poll', () => {
    const index = new JobIndex();
    const [a, b] = jobs(2) as [JobRecord, JobRecord];
    index.reset([a, b]);
    expect(index.staleTargets()).toEqual([]);
    const failing = {
      ...a,
      state: 'running' as const,
      target: 'slurm:login1',
      backend: 'slurm',
      updatedAt: '2026-02-01T00:00:00.000Z',
      error: { code: 'E_SCHEDULER_UNAVAILABLE', message: 'squeue: timed out' },
    };
    index.upsert(failing);
    expect(index.staleTargets()).toEqual([
      {
        backend: 'slurm',
        target: 'slurm:login1',
        profiles: [a.profile],
        message: 'squeue: timed out',
        since: '2026-02-01T00:00:00.000Z',
        jobs: 1,
      },
    ]);
    index.upsert({ ...failing, state: 'succeeded' });
    expect(index.staleTargets()).toEqual([]);
    index.remove(b.id);
    expect(index.size).toBe(1);
  });
});
