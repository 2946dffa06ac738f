/** Options checked against their TypeBox schema and handed back typed, or refused with every problem: what vercel/ai's `parseProviderOptions` is for providers. */
import type { Static, TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ValidationError } from '../errors/validation-error.js';
import { checkSchema } from './profile-schema.js';

export interface ParseOptionsInput<Schema extends TSchema, Input> {
  /** The schema the options must fit (a backend's or a transport's `optionsSchema`). */
  readonly schema: Schema;
  /** The options as the profile has them. */
  readonly options: Input;
  /** Where they are in the profile, the prefix of every issue's path (`options`, `transportOptions`). */
  readonly path: string;
  /** What the error says is invalid, e.g. `Profile "hpc" has invalid options for the slurm backend`. */
  readonly subject: string;
}

/**
 * The options, typed by the schema, once they fit it. The JobManager does this for every
 * operation, so that backends and transports get `context.options` ready to read; a plugin
 * that makes its pieces by hand (a test, a program) does the same with this.
 * @throws ValidationError `E_INVALID_PROFILE` listing every problem as a dot path.
 */
export function parseOptions<Schema extends TSchema, Input>(
  input: ParseOptionsInput<Schema, Input>,
): Input & Static<Schema> {
  const { schema, options } = input;
  if (Value.Check(schema, options)) return options;
  throw new ValidationError(
    'E_INVALID_PROFILE',
    input.subject,
    checkSchema(schema, options, input.path),
  );
}
