/** The one place a profile is put in the form yonder works with, whatever wrote it: trailing slashes trimmed from its paths. */
import type { Profile } from '../spec/profile.js';
import { trimTrailingSlash } from '../validation/validate-fields.js';

/** Normalise what users type: trailing slashes on paths. */
export function normaliseProfile(profile: Profile): Profile {
  const out: Profile = { ...profile };
  if (out.workdir) out.workdir = trimTrailingSlash(out.workdir);
  if (out.remoteRoot) out.remoteRoot = trimTrailingSlash(out.remoteRoot);
  if (out.localRoot && out.localRoot !== '/') out.localRoot = out.localRoot.replace(/\/+$/, '');
  return out;
}
