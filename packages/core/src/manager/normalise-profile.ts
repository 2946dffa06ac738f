/** The one place a profile is put in the form yonder works with, whatever wrote it: paths without trailing slashes, and the SSH settings older versions stored moved to `transportOptions`. */
import type { Profile } from '../spec/profile.js';
import { trimTrailingSlash } from '../validation/validate-fields.js';

/**
 * A profile as yonder works with it. Trailing slashes go from paths. A stored `ssh` field
 * (written by versions before transports were plugins) becomes `transportOptions` when the
 * profile has a host, as only then was it used; options set as `transportOptions` win.
 */
export function normaliseProfile(profile: Profile): Profile {
  const { ssh: legacy, ...out }: Profile = { ...profile };
  if (out.workdir) out.workdir = trimTrailingSlash(out.workdir);
  if (out.remoteRoot) out.remoteRoot = trimTrailingSlash(out.remoteRoot);
  if (out.localRoot && out.localRoot !== '/') out.localRoot = out.localRoot.replace(/\/+$/, '');
  if (typeof legacy === 'object' && legacy !== null && !Array.isArray(legacy) && out.host)
    out.transportOptions = { ...legacy, ...out.transportOptions };
  return out;
}
