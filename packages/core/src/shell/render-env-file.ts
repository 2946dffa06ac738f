import { YonderError } from '../errors/yonder-error.js';
import { ENV_NAME_PATTERN } from '../validation/validate-fields.js';
import { shQuote } from './sh-quote.js';

/**
 * Render variables as an sh file of `export NAME='value'` lines, for a job wrapper to source.
 * Names are checked, values pass the one quoting function: sourcing it runs nothing else.
 * @throws YonderError `E_UNSAFE_VALUE` on a bad name or a NUL in a value.
 */
export function renderEnvFile(variables: Readonly<Record<string, string>>): string {
  let text = '';
  for (const [name, value] of Object.entries(variables)) {
    if (!ENV_NAME_PATTERN.test(name)) {
      throw new YonderError(
        'E_UNSAFE_VALUE',
        `"${name}" is not a valid environment variable name.`,
      );
    }
    text += `export ${name}=${shQuote(value)}\n`;
  }
  return text;
}
