import { describe, expect, it } from 'vitest';
import { createSlurmBackend } from './slurm-backend.js';

describe('createSlurmBackend settings', () => {
  it('declares a 200 s submit grace by default and the one it is given otherwise', () => {
    expect(createSlurmBackend().capabilities.submitGraceSeconds).toBe(200);
    expect(createSlurmBackend({}).capabilities.submitGraceSeconds).toBe(200);
    expect(createSlurmBackend({ submitGraceSeconds: 5 }).capabilities.submitGraceSeconds).toBe(5);
    expect(createSlurmBackend({ submitGraceSeconds: 0 }).capabilities.submitGraceSeconds).toBe(0);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses a submit grace of %s',
    (submitGraceSeconds) => {
      expect(() => createSlurmBackend({ submitGraceSeconds })).toThrow(RangeError);
    },
  );
});
