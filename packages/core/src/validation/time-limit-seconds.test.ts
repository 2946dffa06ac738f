import { describe, expect, it } from 'vitest';
import { timeLimitSeconds } from './validate-job-spec.js';

describe('timeLimitSeconds', () => {
  it('reads every form resources.time takes', () => {
    expect(timeLimitSeconds('5')).toBe(300);
    expect(timeLimitSeconds('0:02')).toBe(2);
    expect(timeLimitSeconds('1:02:03')).toBe(3723);
    expect(timeLimitSeconds('2-3')).toBe(2 * 86_400 + 3 * 3600);
    expect(timeLimitSeconds('1-0:30')).toBe(86_400 + 1800);
    expect(timeLimitSeconds('1-0:0:5')).toBe(86_405);
  });

  it('is null for what is not a time limit', () => {
    for (const text of ['', 'x', '1:2:3:4', '-1', '1-', '1.5', '5s'])
      expect(timeLimitSeconds(text)).toBeNull();
  });
});
