/** JSON from outside: any depth parsed without a stack overflow, refused by field past 64 levels or with a reserved key. */
import { describe, expect, it } from 'vitest';
import { parseJson } from './parse-json.js';

describe('parseJson', () => {
  it('parses ordinary JSON', () => {
    expect(parseJson('{"a": [1, {"b": null}], "c": "x"}')).toEqual({
      ok: true,
      value: { a: [1, { b: null }], c: 'x' },
    });
  });

  it('says where text is not JSON, as a syntax problem', () => {
    const parsed = parseJson('{"a": ', { prefix: 'settings' });
    expect(parsed).toMatchObject({ ok: false, syntax: true, issues: [{ path: 'settings' }] });
  });

  it('never quotes the text it refuses (a secrets file given as settings), and says where', () => {
    const message = (text: string): string => {
      const parsed = parseJson(text, { prefix: 'settings' });
      return parsed.ok ? '' : (parsed.issues[0]?.message ?? '');
    };
    const secrets = 'TOKEN=s3cr3t-value\nOTHER=x';
    expect(message(secrets)).toBe('is not valid JSON (an unexpected character)');
    expect(message('[1,2,,"s3cr3t"]')).not.toContain('s3cr3t');
    expect(message('{"a": 1,\n  "b" 2}')).toBe(
      'is not valid JSON (Unexpected number at line 2, column 7)',
    );
    expect(message('{"a": "s3cr3t')).not.toContain('s3cr3t');
    expect(message('[1, 2 3]')).toBe(
      "is not valid JSON (Expected ',' or ']' after array element at column 7)",
    );
    expect(message('{"a": ')).toMatch(/^is not valid JSON \(/);
  });

  it('refuses nesting past 64 levels by field, even 1,000,000 deep, without recursing', () => {
    expect(parseJson(`${'['.repeat(64)}${']'.repeat(64)}`).ok).toBe(true);
    const parsed = parseJson(`{"a":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`, {
      prefix: 'settings',
    });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.syntax).toBe(false);
    expect(parsed.issues).toHaveLength(1);
    expect(parsed.issues[0]?.path).toMatch(/^settings\.a\.0\.0\.0\.0\.…\(\d+ more\)…(\.0){4}$/);
    expect(parsed.issues[0]?.message).toContain('deeper than 64 levels');
  });

  it.each(['__proto__', 'constructor', 'prototype'])('refuses the key %s wherever it is', (key) => {
    const parsed = parseJson(`{"a":[{"b":{"${key}":{"x":1}}}]}`, { prefix: 'settings' });
    expect(parsed).toMatchObject({
      ok: false,
      syntax: false,
      issues: [{ path: `settings.a.0.b.${key}`, message: expect.stringContaining('reserved') }],
    });
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('takes a different depth limit', () => {
    expect(parseJson('[[[1]]]', { maxDepth: 2 }).ok).toBe(false);
    expect(parseJson('[[1]]', { maxDepth: 2 }).ok).toBe(true);
  });
});
