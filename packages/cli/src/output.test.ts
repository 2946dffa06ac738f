/** How the CLI shows jobs to people: tables aligned by display width (CJK, emoji, ZWJ, combining marks), control characters escaped. */
import type { JobRecord, JobState } from '@yonder/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clipToWidth } from './format-table.js';
import { jobTable } from './job-table.js';
import { formatDuration, type Io, jobDetails } from './output.js';

const NOW = new Date('2026-01-02T03:04:05.000Z');

function io(color: boolean): Io {
  return { stdout: () => {}, stderr: () => {}, color, env: {}, cwd: '/' };
}

function job(
  id: string,
  name: string,
  profile: string,
  state: JobState,
  exitCode: number | null,
): JobRecord {
  const shown = { id, name, profile, state, exitCode, signal: null, createdAt: NOW.toISOString() };
  // Only what the table shows; the rest of a record does not reach it.
  return shown as unknown as JobRecord;
}

const JOBS = [
  job('aaaaaaaaaaaa', '日本語のジョブ', 'local', 'succeeded', 0),
  job('bbbbbbbbbbbb', '🎉 party', 'gpu', 'running', null),
  job('cccccccccccc', 'family 👩‍👩‍👧', 'local', 'failed', 3),
  job('dddddddddddd', 'cafe\u0301', 'hpc', 'pending', null),
];

// Written out by hand: 日本語のジョブ is 14 columns, 🎉 2, the ZWJ family 2, é (e + U+0301) 1.
const EXPECTED = [
  'ID            NAME            PROFILE  STATE      EXIT  CREATED',
  'aaaaaaaaaaaa  日本語のジョブ  local    succeeded  0     0s ago',
  'bbbbbbbbbbbb  🎉 party        gpu      running    -     0s ago',
  'cccccccccccc  family 👩‍👩‍👧       local    failed     3     0s ago',
  'dddddddddddd  cafe\u0301            hpc      pending    -     0s ago',
].join('\n');

describe('jobTable', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aligns rows whose names hold CJK, emoji and combining characters', () => {
    expect(jobTable(io(false), JOBS)).toBe(`${EXPECTED}\n`);
  });

  it('colours the state without moving a column', () => {
    const painted = jobTable(io(true), JOBS);
    expect(painted).toContain('\u001b[32msucceeded\u001b[0m');
    expect(painted.replace(/\u001b\[\d+m/g, '')).toBe(`${EXPECTED}\n`);
  });

  it('cuts a long wide name at 40 columns, never inside a character, and shows controls escaped', () => {
    const long = job('eeeeeeeeeeee', `${'漢'.repeat(30)}`, 'local', 'running', null);
    const hostile = job('ffffffffffff', 'red\u001b[31m\u0007\u009b2J', 'local', 'running', null);
    const lines = jobTable(io(false), [long, hostile]).split('\n');
    expect(lines[1]).toBe(`eeeeeeeeeeee  ${'漢'.repeat(19)}…  local    running  -     0s ago`);
    expect(lines[2]).toBe(
      `ffffffffffff  red\\x1b[31m\\x07\\x9b2J${' '.repeat(39 - 21)}  local    running  -     0s ago`,
    );
    expect(lines.join('\n')).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });

  it('shows each job’s own age, also in hours that cross a day or hour boundary, and for times not in UTC form', () => {
    // Worked out one job at a time, as the table must show it.
    const expected = (createdAt: string): string => {
      const seconds = Math.max(0, Math.round((NOW.getTime() - Date.parse(createdAt)) / 1000));
      if (seconds < 60) return `${seconds}s ago`;
      if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
      if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
      return `${Math.floor(seconds / 86_400)}d ago`;
    };
    const times: string[] = [];
    // Around now, each boundary of a minute, hour and day, ± 1 ms and ± 500 ms (the rounding).
    for (const boundary of [0, 60, 3600, 86_400, 2 * 86_400, 3 * 86_400 + 3600]) {
      for (const delta of [-501, -500, -499, -1, 0, 1, 499, 500, 501, 1800_000])
        times.push(new Date(NOW.getTime() - boundary * 1000 + delta).toISOString());
    }
    // In the future (a clock behind), and with an offset or no milliseconds.
    times.push(new Date(NOW.getTime() + 90_000).toISOString());
    // (The one with an offset begins as the hour before it in UTC does, but is 12 hours earlier.)
    times.push('2025-12-29T10:30:00.000Z', '2025-12-29T10:30:00.000+12:00');
    times.push('2025-12-31T03:04:05Z', '2026-01-02T03:04:05.5Z');
    const jobs = times.map((createdAt, n) => ({
      ...job(`${n}`.padStart(12, '0'), 'x', 'local', 'succeeded', 0),
      createdAt,
    }));
    const ages = jobTable(io(false), jobs)
      .split('\n')
      .slice(1, -1)
      .map((line) => line.split(/ {2,}/).at(-1));
    expect(ages).toEqual(times.map(expected));
  });
});

describe('clipToWidth', () => {
  it('keeps whole grapheme clusters and ends with … within the width', () => {
    expect(clipToWidth('👩‍👩‍👧👩‍👩‍👧👩‍👩‍👧', 5)).toBe('👩‍👩‍👧👩‍👩‍👧…');
    expect(clipToWidth('👩‍👩‍👧👩‍👩‍👧👩‍👩‍👧', 4)).toBe('👩‍👩‍👧…');
    expect(clipToWidth('abc', 3)).toBe('abc');
    expect(clipToWidth('abcd', 3)).toBe('ab…');
  });
});

describe('jobDetails', () => {
  it('shows control characters in a value escaped, and colours only the state', () => {
    const record = {
      ...job('aaaaaaaaaaaa', 'evil\u001b]0;owned\u0007', 'local', 'failed', 1),
      backend: 'local',
      nativeState: 'exited\u001b[2J',
      reason: 'exit code 1',
      failureKind: 'application',
      externalId: '42',
      spec: { argv: ['sh', '-c', 'exit 1'] },
      finishedAt: null,
      cancel: null,
      error: null,
      history: [
        { at: NOW.toISOString(), from: null, to: 'failed', source: 'x\u009b', nativeState: null },
      ],
    } as unknown as JobRecord;
    const text = jobDetails(io(true), record);
    expect(text).toContain('Name:         evil\\x1b]0;owned\\x07\n');
    expect(text).toContain('State:        \u001b[31mfailed\u001b[0m (exited\\x1b[2J)\n');
    expect(text).toContain('[x\\x9b]');
    expect(text.replace(/\u001b\[\d+m/g, '')).not.toMatch(
      /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/,
    );
  });
});

describe('status in full', () => {
  it('names the env and secrets (not their values), the cwd, resources, scheduler options, job dir and log', () => {
    const record = {
      ...job('cccccccccccc', 'full', 'hpc', 'running', null),
      backend: 'slurm',
      spec: {
        argv: ['run'],
        env: { A: 'value-one', B: 'value-two' },
        secretNames: ['TOKEN'],
        resources: { partition: 'debug', cpus: 2 },
        schedulerOptions: ['--exclusive'],
        cwd: '/work/a b',
        settingsSha256: null,
      },
      data: { jobDir: '/scratch/jobs/cccccccccccc', log: '/scratch/jobs/cccccccccccc/job.log' },
      cancel: null,
      error: null,
      history: [],
    } as unknown as JobRecord;
    const text = jobDetails(io(false), record);
    for (const line of [
      'Cwd:          /work/a b',
      'Env:          A B',
      'Secrets:      TOKEN',
      'Resources:    partition=debug cpus=2',
      'Sched. opts:  "--exclusive"',
      'Job dir:      /scratch/jobs/cccccccccccc',
      'Log:          /scratch/jobs/cccccccccccc/job.log',
    ])
      expect(text).toContain(`${line}\n`);
    expect(text).not.toContain('value-');
  });
});

describe('the job’s own times', () => {
  it('status shows when the job started and ended, and how long it ran', () => {
    const record = {
      ...job('bbbbbbbbbbbb', 'timed', 'local', 'succeeded', 0),
      backend: 'local',
      spec: { argv: ['sleep', '65'] },
      startedAt: '2030-01-01T00:00:00.500Z',
      finishedAt: '2030-01-01T00:01:05.700Z',
      noticedAt: '2030-01-01T00:01:09.000Z',
      cancel: null,
      error: null,
      history: [],
    } as unknown as JobRecord;
    const text = jobDetails(io(false), record);
    expect(text).toContain('Started:      2030-01-01T00:00:00.500Z\n');
    expect(text).toContain('Finished:     2030-01-01T00:01:05.700Z\n');
    expect(text).toContain('Duration:     1m 05s\n');
    expect(text).not.toContain('Env:');
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(12_340)).toBe('12.3s');
    expect(formatDuration(7_380_000)).toBe('2h 03m');
  });
});
