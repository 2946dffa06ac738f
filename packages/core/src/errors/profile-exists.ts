/** The one error for a profile created where one of its name (any case) exists. */
import { YonderError } from './yonder-error.js';

/** `E_PROFILE_EXISTS` for `name`, with the name in `data.profile` (the CLI adds its hint). */
export function profileExists(name: string, cause?: unknown): YonderError {
  return new YonderError('E_PROFILE_EXISTS', `A profile named "${name}" exists.`, {
    data: { profile: name },
    ...(cause === undefined ? {} : { cause }),
  });
}
