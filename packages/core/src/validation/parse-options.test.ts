import { Type } from '@sinclair/typebox';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ValidationError } from '../errors/validation-error.js';
import { parseOptions } from './parse-options.js';

const schema = Type.Object(
  { queue: Type.String(), slots: Type.Optional(Type.Integer({ minimum: 1 })) },
  { additionalProperties: false },
);

describe('parseOptions', () => {
  it('hands back the options that fit, typed by the schema', () => {
    const input: unknown = { queue: 'short', slots: 4 };
    const options = parseOptions({ schema, options: input, path: 'options', subject: 'Options' });
    expect(options).toBe(input);
    expectTypeOf(options.queue).toEqualTypeOf<string>();
    expectTypeOf(options.slots).toEqualTypeOf<number | undefined>();
  });

  it('refuses options that do not fit, with every problem under the path', () => {
    let caught: unknown;
    try {
      parseOptions({
        schema,
        options: { slots: 0, colour: 'red' },
        path: 'transportOptions',
        subject: 'Profile "q" has invalid options for the pbs transport',
      });
    } catch (error) {
      caught = error;
    }
    expect(ValidationError.isInstance(caught)).toBe(true);
    const error = caught as ValidationError;
    expect(error.code).toBe('E_INVALID_PROFILE');
    expect(error.message).toMatch(/^Profile "q" has invalid options for the pbs transport:\n {2}/);
    expect(error.issues).toEqual([
      { path: 'transportOptions.queue', message: 'expected required property' },
      { path: 'transportOptions.colour', message: 'unknown field (known fields: queue, slots)' },
      { path: 'transportOptions.queue', message: 'expected string' },
      { path: 'transportOptions.slots', message: 'expected integer to be greater or equal to 1' },
    ]);
  });
});
