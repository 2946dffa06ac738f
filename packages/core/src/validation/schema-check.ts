/** A TypeBox schema's check that interprets the schema for the first values and compiles it once many have been checked: a command that reads one record does not pay for a compile, a listing of thousands checks each at compiled speed. */
import type { Static, TSchema } from '@sinclair/typebox';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';

/**
 * How many values are checked by interpreting the schema before it is compiled. Compiling the
 * job record schema costs about 8 ms here, a check by interpretation about 0.1 ms more than a
 * compiled one: compiling pays for itself after some 70 values.
 */
export const INTERPRETED_CHECKS = 64;

/** `check(value)`: whether the value matches `schema`, as TypeBox's `Value.Check` says (compiled after `interpreted` values). */
export function createSchemaCheck<T extends TSchema>(
  schema: T,
  interpreted = INTERPRETED_CHECKS,
): (value: unknown) => value is Static<T> {
  let checked = 0;
  let compiled: TypeCheck<T> | undefined;
  return (value: unknown): value is Static<T> => {
    if (compiled === undefined && checked < interpreted) {
      checked += 1;
      return Value.Check(schema, value);
    }
    compiled ??= TypeCompiler.Compile(schema);
    return compiled.Check(value);
  };
}
