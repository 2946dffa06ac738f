import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canaryFragments,
  HOSTILE_FRAGMENTS,
  hostileString,
  hostileWords,
  INVALID_UTF8,
  LINE_BREAKS,
  NUL,
} from './hostile-fragments.js';

describe('the hostile fragments', () => {
  it('hold what each consumer relies on: no line break or NUL, all kinds present', () => {
    for (const fragment of HOSTILE_FRAGMENTS) {
      expect(fragment).not.toMatch(/[\r\n\0]/);
      expect(fragment.length).toBeGreaterThan(0);
    }
    expect(new Set(HOSTILE_FRAGMENTS).size).toBe(HOSTILE_FRAGMENTS.length);
    for (const kind of ["'", '"', '$(id)', '`', ';', '-rf', ' ', 'é', '🎉', '\u2028'])
      expect(HOSTILE_FRAGMENTS).toContain(kind);
    expect(LINE_BREAKS).toEqual(['\n', '\r', '\r\n']);
    expect(NUL).toBe('\u0000');
  });

  it('INVALID_UTF8 holds only bytes a strict decoder refuses', () => {
    const strict = new TextDecoder('utf-8', { fatal: true });
    for (const bytes of INVALID_UTF8)
      expect(() => strict.decode(bytes), bytes.toString('hex')).toThrow();
  });

  it('every canary command names the canary', () => {
    for (const fragment of canaryFragments('/tmp/CANARY')) expect(fragment).toContain('CANARY');
    expect(hostileWords('/c')).toHaveLength(
      HOSTILE_FRAGMENTS.length + LINE_BREAKS.length + canaryFragments('/c').length,
    );
  });

  it('hostileString never holds NUL, and no line break when told so', () => {
    fc.assert(
      fc.property(hostileString('/tmp/c'), (value) => !value.includes(NUL)),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(
        hostileString('/tmp/c', { lineBreaks: false }),
        (value) => !/[\r\n\0]/.test(value),
      ),
      { numRuns: 300 },
    );
  });
});
