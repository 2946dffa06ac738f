/** The schema check that interprets, then compiles: the same answers before and after it compiles, for values that match and values that do not. */
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { createSchemaCheck } from './schema-check.js';

const Schema = Type.Object(
  {
    id: Type.String({ pattern: '^[0-9a-f]{12}$' }),
    state: Type.Union([Type.Literal('running'), Type.Literal('failed')]),
    exitCode: Type.Union([Type.Integer(), Type.Null()]),
    tags: Type.Optional(Type.Array(Type.String(), { maxItems: 2 })),
  },
  { additionalProperties: false },
);

const VALUES: Array<[unknown, boolean]> = [
  [{ id: '0123456789ab', state: 'running', exitCode: null }, true],
  [{ id: '0123456789ab', state: 'failed', exitCode: 3, tags: ['a', 'b'] }, true],
  [{ id: '0123456789AB', state: 'running', exitCode: null }, false],
  [{ id: '0123456789ab', state: 'lost', exitCode: null }, false],
  [{ id: '0123456789ab', state: 'running', exitCode: 1.5 }, false],
  [{ id: '0123456789ab', state: 'running', exitCode: null, extra: 1 }, false],
  [{ id: '0123456789ab', state: 'running', exitCode: null, tags: ['a', 'b', 'c'] }, false],
  [{ id: '0123456789ab', state: 'running' }, false],
  [null, false],
  ['0123456789ab', false],
];

describe('createSchemaCheck', () => {
  it('answers as the schema says while interpreting, after compiling, and across the switch', () => {
    const interpreting = createSchemaCheck(Schema, Number.POSITIVE_INFINITY);
    const compiled = createSchemaCheck(Schema, 0);
    const switching = createSchemaCheck(Schema, 3);
    for (let round = 0; round < 3; round += 1)
      for (const [value, valid] of VALUES) {
        expect(interpreting(value)).toBe(valid);
        expect(compiled(value)).toBe(valid);
        expect(switching(value)).toBe(valid);
      }
  });
});
