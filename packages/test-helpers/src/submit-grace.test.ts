import { describe, expect, it } from 'vitest';
import { submitGraceMs } from './submit-grace.js';

describe('submitGraceMs', () => {
  it('reads a backend’s declared grace, in milliseconds', () => {
    expect(submitGraceMs({ id: 'x', capabilities: { submitGraceSeconds: 30 } })).toBe(30_000);
    expect(submitGraceMs({ id: 'x', capabilities: { submitGraceSeconds: 0 } })).toBe(0);
  });

  it('refuses a backend that declares none, naming it', () => {
    expect(() => submitGraceMs({ id: 'toy', capabilities: {} })).toThrow(
      'The toy backend declares no capabilities.submitGraceSeconds.',
    );
  });
});
