import { parseTemplate } from '@yonder/core/backend-kit';
import { describe, expect, it } from 'vitest';
import { createCommandBackend, renderCommand } from './command-backend.js';
import { PLACEHOLDERS } from './command-options.js';
import { extractId, parseStatus } from './parse-status.js';

const backend = createCommandBackend();
const profile = (options: Record<string, unknown>) => ({
  name: 'q',
  backend: 'command',
  options: options as never,
});
const valid = {
  submit: 'qsub {script}',
  status: 'qstat {external_ids}',
  cancel: 'qdel {external_id}',
};

describe('command backend capabilities', () => {
  it('gives a job no source knows two minutes before it may be called lost', () => {
    expect(backend.capabilities.absentGraceSeconds).toBe(120);
  });
});

describe('command profile validation', () => {
  it('accepts a complete profile', () => {
    expect(backend.validateProfile(profile(valid))).toEqual([]);
  });

  it('refuses a program named by a relative path on this machine (the working directory’s), not over ssh', () => {
    const local = (options: Record<string, unknown>) =>
      backend.validateProfile(profile({ ...valid, ...options })).map((issue) => issue.path);
    expect(local({ submit: './qsub {script}' })).toEqual(['options.submit']);
    expect(local({ status: 'bin/qstat {external_ids}' })).toEqual(['options.status']);
    expect(local({ cancel: '~/bin/qdel {external_id}' })).toEqual(['options.cancel']);
    expect(local({ logs: './{name} {log}' })).toEqual(['options.logs']);
    expect(
      local({ submit: '/opt/pbs/bin/qsub {script}', status: '{script} {external_ids}' }),
    ).toEqual([]);
    // Over ssh a relative program is below the remote home, where the remote shell starts.
    const remote = backend.validateProfile({
      ...profile({ ...valid, submit: 'bin/qsub {script}' }),
      host: 'h',
    });
    expect(remote).toEqual([]);
  });

  it('names each template that lacks what it needs', () => {
    const issues = backend.validateProfile(
      profile({ submit: 'qsub job.sh', status: 'qstat', cancel: 'qdel', logs: 'cat x' }),
    );
    expect(issues).toEqual([
      { path: 'options.submit', message: 'must use {script} or {settings}' },
      { path: 'options.status', message: 'must use {external_id} or {external_ids}' },
      { path: 'options.cancel', message: 'must use {external_id} or {external_ids}' },
      { path: 'options.logs', message: 'must use {external_id} or {log}' },
    ]);
  });

  it('refuses unknown placeholders, bad syntax, unparseable templates and bad id patterns', () => {
    const paths = (options: Record<string, unknown>) =>
      backend.validateProfile(profile({ ...valid, ...options }));
    expect(paths({ submit: 'qsub {scrpit}' })[0]).toMatchObject({
      path: 'options.submit',
      message: expect.stringContaining('unknown placeholder {scrpit}'),
    });
    expect(paths({ status: 'qstat {external_id' })[0]).toMatchObject({
      path: 'options.status',
      message: expect.stringContaining('invalid placeholder syntax'),
    });
    expect(paths({ cancel: "qdel '{external_id}" })[0]).toMatchObject({
      path: 'options.cancel',
      message: expect.stringContaining('not closed'),
    });
    expect(paths({ submit: '--opt {script}' })[0]).toMatchObject({
      path: 'options.submit',
      message: expect.stringContaining('program name'),
    });
    expect(paths({ idPattern: '(unclosed' })[0]).toMatchObject({ path: 'options.idPattern' });
  });
});

describe('rendering', () => {
  it('keeps hostile values inside one argument and expands {external_ids}', () => {
    const parsed = parseTemplate(
      'submit --name={name} {name} x{external_ids}y {external_ids}',
      't',
      PLACEHOLDERS,
    );
    const hostile = `a b; rm -rf / $(touch x) 'q' "d"\nz`;
    expect(renderCommand(parsed, { name: hostile }, ['1', '2'])).toEqual([
      'submit',
      `--name=${hostile}`,
      hostile,
      'x1,2y',
      '1',
      '2',
    ]);
  });
});

describe('status parsing', () => {
  it('reads id/state/exit/reason lines and JSON lines', () => {
    expect(
      parseStatus(
        '12 RUNNING\n13 FAILED 3 out of luck\n{"id": 14, "state": "DONE", "exit_code": 0}\n\nlonely\n',
        true,
      ),
    ).toEqual([
      { id: '12', state: 'RUNNING', exitCode: null, reason: null },
      { id: '13', state: 'FAILED', exitCode: 3, reason: 'out of luck' },
      { id: '14', state: 'DONE', exitCode: 0, reason: null },
    ]);
    expect(parseStatus('RUNNING\n', false)).toEqual([
      { id: null, state: 'RUNNING', exitCode: null, reason: null },
    ]);
    expect(parseStatus('77 COMPLETED 0\n', false, '77')[0]).toMatchObject({
      id: '77',
      state: 'COMPLETED',
      exitCode: 0,
    });
  });

  it('extracts the id by pattern or first line', () => {
    expect(extractId('Job 42 queued\n', 'Job (?<id>\\d+) queued')).toBe('42');
    expect(extractId('Submitted batch job 7\n', 'job (\\d+)')).toBe('7');
    expect(extractId('\n  abc-1.2  \nmore', undefined)).toBe('abc-1.2');
    expect(extractId('nothing', 'Job (\\d+)')).toBe('');
  });
});
