import { describe, expect, it } from 'vitest';
import { parse } from './args.js';

const options = {
  name: { type: 'string' },
  'scheduler-option': { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const;

describe('parse', () => {
  it('takes the word after --scheduler-option as its value, whatever it starts with', () => {
    const parsed = parse(
      ['--scheduler-option', '--exclusive', '--scheduler-option', '-N', '--json'],
      options,
      'submit',
    );
    expect(parsed.values['scheduler-option']).toEqual(['--exclusive', '-N']);
    expect(parsed.values.json).toBe(true);
  });

  it('keeps the = form and leaves what follows -- alone', () => {
    const parsed = parse(
      ['--scheduler-option=--mem=1G', '--', '--scheduler-option', 'x'],
      options,
      'submit',
    );
    expect(parsed.values['scheduler-option']).toEqual(['--mem=1G']);
    expect(parsed.rest).toEqual(['--scheduler-option', 'x']);
  });

  it('suggests the option a typo meant', () => {
    expect(() => parse(['--nme', 'x'], options, 'submit')).toThrow(
      'unknown option "--nme" (did you mean --name?). See "yonder submit --help".',
    );
    expect(() => parse(['--frobnicate'], options, 'submit')).toThrow(
      /^unknown option "--frobnicate"\. See/,
    );
  });

  it('says which option lacks a value, in our words', () => {
    expect(() => parse(['--name'], options, 'submit')).toThrow(
      '--name needs a value. See "yonder submit --help".',
    );
    expect(() => parse(['--name', '--json'], options, 'submit')).toThrow(
      '--name needs a value; "--json" looks like an option (write --name=--json if it is the value)',
    );
    expect(() => parse(['--json=yes'], options, 'submit')).toThrow('--json takes no value');
  });
});
