/** The job record schema: what a damaged record is refused for, by dot path. */
import { describe, expect, it } from 'vitest';
import { sampleJob } from '../conformance/store-conformance.js';
import { validateJobRecord } from './job-record-schema.js';

const paths = (value: unknown) => validateJobRecord(value).map((issue) => issue.path);

describe('validateJobRecord', () => {
  it('accepts a record as the ledger writes it, and a newer yonder’s extra field', () => {
    expect(validateJobRecord(sampleJob())).toEqual([]);
    expect(validateJobRecord({ ...sampleJob(), addedLater: { x: 1 } })).toEqual([]);
  });

  it.each([
    ['cancel', undefined],
    ['cancel', 5],
    ['data', null],
    ['profileSnapshot', null],
    ['spec', null],
    ['history', {}],
    ['state', 'done'],
    ['exitCode', 1.5],
    ['createdAt', 'yesterday'],
    ['id', 'NOT-HEX'],
    ['revision', -1],
  ])('refuses %s = %j, naming it', (field, value) => {
    const job: Record<string, unknown> = { ...sampleJob() };
    if (value === undefined) delete job[field];
    else job[field] = value;
    expect(
      paths(job).some((path) => path === field || path.startsWith(`${field}.`) || path === ''),
    ).toBe(true);
    expect(validateJobRecord(job).length).toBeGreaterThan(0);
  });

  it('checks the profile snapshot as a profile, and nested fields by path', () => {
    expect(
      paths({ ...sampleJob(), profileSnapshot: { name: '-bad', backend: 'local' } }),
    ).toContain('profileSnapshot.name');
    const job = sampleJob();
    expect(paths({ ...job, spec: { ...job.spec, argv: [] } })).toContain('spec.argv');
  });

  it('keeps a job’s container and the image its target identified, and names a damaged one', () => {
    const job = sampleJob();
    const container = {
      runtime: 'podman' as const,
      image: 'localhost/p:1',
      binds: ['/data:/in:ro'],
      gpus: false,
      env: { A: 'b' },
    };
    const inContainer = {
      ...job,
      spec: { ...job.spec, container },
      containerImage: { id: 'sha256:abc', digest: null },
    };
    expect(validateJobRecord(inContainer)).toEqual([]);
    expect(
      paths({
        ...inContainer,
        spec: { ...job.spec, container: { ...container, runtime: 'docker' } },
      }),
    ).toContain('spec.container');
    expect(paths({ ...inContainer, containerImage: { id: 5 } })).toContain('containerImage');
  });

  it('refuses a reserved key anywhere, and a non-object', () => {
    const text = JSON.stringify(sampleJob({ data: { x: 1 } })).replace(
      '"data":{',
      '"data":{"__proto__":{"a":1},',
    );
    expect(paths(JSON.parse(text))).toEqual(['data.__proto__']);
    expect(paths(null)).toEqual(['']);
    expect(paths([])).toEqual(['']);
  });
});
