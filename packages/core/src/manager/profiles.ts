/** Profiles as the job manager handles them: validated against the common fields, the backend's schema and checks and the transport's schema; saved; looked up; checked against their target. */

import { getErrorMessage } from '../errors/get-error-message.js';
import { assertValid, type ValidationIssue } from '../errors/validation-error.js';
import { YonderError } from '../errors/yonder-error.js';
import type { BackendV1, ProbeReportV1 } from '../spec/backend/v1/backend-v1.js';
import type { Profile } from '../spec/profile.js';
import type { SaveProfileOptionsV1 } from '../spec/store/v1/store-v1.js';
import type { TransportDescriptionV1 } from '../spec/transport/v1/transport-v1.js';
import { checkSchema, validateProfileFields } from '../validation/profile-schema.js';
import { chooseTransport } from './choose-transport.js';
import type { ManagerContext } from './manager-context.js';
import { normaliseProfile } from './normalise-profile.js';
import { defaultsIssues } from './profile-defaults.js';

/** The profile used when none is named and `local` has not been saved. */
export const BUILTIN_LOCAL_PROFILE: Profile = Object.freeze({ name: 'local', backend: 'local' });

/**
 * Every problem with a profile: common fields, the backend's schema and its own checks, and the
 * chosen transport's schema for `transportOptions`.
 */
export async function validateProfile(
  context: ManagerContext,
  input: Profile,
): Promise<ValidationIssue[]> {
  const isObject = typeof input === 'object' && input !== null && !Array.isArray(input);
  const profile = isObject ? normaliseProfile(input) : input;
  const issues = validateProfileFields(profile);
  if (issues.length > 0) return issues;
  let backend: BackendV1;
  try {
    backend = await context.resolveBackend(profile.backend, profile);
  } catch (error) {
    return [{ path: 'backend', message: getErrorMessage(error) }];
  }
  const result = checkSchema(backend.optionsSchema, profile.options ?? {}, 'options');
  if (backend.capabilities.host === 'required' && !profile.host) {
    result.push({ path: 'host', message: `the ${backend.id} backend needs a host` });
  }
  result.push(...(await transportIssues(context, profile, backend)));
  result.push(...defaultsIssues(profile, backend));
  result.push(...backend.validateProfile(profile));
  return result;
}

/** Whether the chosen transport exists, and the profile's `transportOptions` fit its schema. */
async function transportIssues(
  context: ManagerContext,
  profile: Profile,
  backend: BackendV1,
): Promise<ValidationIssue[]> {
  const id = chooseTransport(profile, backend);
  try {
    const factory = await context.resolveTransport(id, profile);
    return factory.optionsSchema
      ? checkSchema(factory.optionsSchema, profile.transportOptions ?? {}, 'transportOptions')
      : [];
  } catch (error) {
    return [{ path: 'transport', message: getErrorMessage(error) }];
  }
}

/**
 * Validate and save a profile (with `create`, only if none of its name exists).
 * @throws ValidationError `E_INVALID_PROFILE` listing every problem.
 * @throws YonderError `E_PROFILE_EXISTS` with `create` when one of its name exists.
 */
export async function saveProfile(
  context: ManagerContext,
  input: Profile,
  options: SaveProfileOptionsV1 = {},
): Promise<Profile> {
  const profile = normaliseProfile(input);
  assertValid(
    'E_INVALID_PROFILE',
    `Profile "${String(input.name)}" is invalid`,
    await validateProfile(context, profile),
  );
  await context.store.saveProfile(profile, options);
  return profile;
}

/**
 * The named profile; `local` falls back to the built-in one.
 * @throws YonderError `E_NO_SUCH_PROFILE`.
 */
export async function readProfile(context: ManagerContext, name: string): Promise<Profile> {
  const stored = await context.store.getProfile(name);
  if (stored) return normaliseProfile(stored);
  if (name.toLowerCase() === 'local') return BUILTIN_LOCAL_PROFILE;
  const { profiles } = await context.store.listProfiles();
  const names = [
    'local',
    ...profiles.map((p) => p.name).filter((n) => n.toLowerCase() !== 'local'),
  ];
  // How to create one is for the front end to say (the CLI names `yonder profile add`).
  throw new YonderError(
    'E_NO_SUCH_PROFILE',
    `No profile named "${name}". Profiles: ${names.join(', ')}.`,
    {
      data: { profile: name, profiles: names },
    },
  );
}

/** What `profile check` found: the profile's problems, the backend's probe, the transport's own account. */
export interface ProfileCheck {
  profile: Profile;
  issues: ValidationIssue[];
  probe: ProbeReportV1 | null;
  /** The transport's route and warnings (`describe`), when it gives them; null otherwise. */
  transport: TransportDescriptionV1 | null;
}

/** Validate a profile, ask its transport how it reaches the target, and reach it. */
export async function checkProfile(context: ManagerContext, name: string): Promise<ProfileCheck> {
  const profile = await readProfile(context, name);
  const issues = await validateProfile(context, profile);
  if (issues.length > 0) return { profile, issues, probe: null, transport: null };
  const backend = await context.resolveBackend(profile.backend, profile);
  const backendContext = await context.backendContext(profile, backend);
  // The transport in use is always said; what else it tells of its route, where it can.
  const facts = { transport: chooseTransport(profile, backend) };
  let transport: TransportDescriptionV1 = { facts, warnings: [], problems: [] };
  if (backendContext.transport.describe) {
    try {
      const told = await backendContext.transport.describe();
      transport = { ...told, facts: { ...facts, ...told.facts } };
    } catch (error) {
      transport = { facts, warnings: [], problems: [getErrorMessage(error)] };
    }
  }
  const probe = await backend.probe(profile, backendContext);
  return { profile, issues, probe, transport };
}
