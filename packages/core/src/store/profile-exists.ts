/** The one refusal of an exclusive profile save (`saveProfile(profile, { exclusive: true })`), for every store. */
import { YonderError } from '../errors/yonder-error.js';

/** `E_PROFILE_EXISTS` naming the profile, with `data.profile` for a front end's hint. */
export function profileExistsError(name: string): YonderError {
  return new YonderError('E_PROFILE_EXISTS', `A profile named "${name}" exists.`, {
    data: { profile: name },
  });
}
