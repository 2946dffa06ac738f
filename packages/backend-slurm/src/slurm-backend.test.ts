import { describe, expect, it } from 'vitest';
import { createSlurmBackend } from './slurm-backend.js';

describe('createSlurmBackend settings', () => {
  it('declares a 200 s submit grace by default and the one it is given otherwise', () => {
    expect(createSlurmBackend().capabilities.submitGraceSeconds).toBe(200);
    expect(createSlurmBackend({}).capabilities.submitGraceSeconds).toBe(200);
    expect(createSlurmBackend({ submitGraceSeconds: 5 }).capabilities.submitGraceSeconds).toBe(5);
    expect(createSlurmBackend({ submitGraceSeconds: 0 }).capabilities.submitGraceSeconds).toBe(0);
  });

  it('declares a 120 s absence grace by default and the one it is given otherwise', () => {
    expect(createSlurmBackend().capabilities.absentGraceSeconds).toBe(120);
    expect(createSlurmBackend({ absentGraceSeconds: 0 }).capabilities.absentGraceSeconds).toBe(0);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses a submit or absence grace of %s',
    (value) => {
      expect(() => createSlurmBackend({ submitGraceSeconds: value })).toThrow(RangeError);
      expect(() => createSlurmBackend({ absentGraceSeconds: value })).toThrow(RangeError);
    },
  );
});
