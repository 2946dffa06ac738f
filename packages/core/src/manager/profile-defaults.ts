/** A profile's defaults for every submit (resources, scheduler options) and its policy for what the backend cannot honour: merged into each job spec, and checked when the profile is. */
import type { ValidationIssue } from '../errors/validation-error.js';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import { type JobSpec, RESOURCE_NAMES, type ResourceName, type Resources } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import { validateJobSpec } from '../validation/validate-job-spec.js';

/** A job spec after its profile's defaults, and what the policy dropped from it (for a warning). */
export interface EffectiveSpec {
  spec: JobSpec;
  /** What was left out because the backend cannot honour it, for people: `time`, `schedulerOptions`… */
  dropped: string[];
}

/**
 * The spec a submit through `profile` asks for: each default resource unless the spec names it,
 * the default scheduler options before the spec's own; then, unless the profile's
 * `unsupportedResources` is `refuse` (the default), without what the backend cannot honour.
 */
export function applyProfileDefaults(
  spec: JobSpec,
  profile: Profile,
  backend: BackendV1,
): EffectiveSpec {
  const defaults = profile.defaults ?? {};
  const resources: Resources = { ...defaults.resources };
  for (const [key, value] of Object.entries(spec.resources ?? {})) {
    if (value !== undefined) (resources as Record<string, unknown>)[key] = value;
  }
  let schedulerOptions = [...(defaults.schedulerOptions ?? []), ...(spec.schedulerOptions ?? [])];
  const dropped: string[] = [];
  if ((profile.unsupportedResources ?? 'refuse') !== 'refuse') {
    const supported = new Set<ResourceName>(backend.capabilities.resources);
    for (const key of RESOURCE_NAMES) {
      if (resources[key] !== undefined && !supported.has(key)) {
        delete resources[key];
        dropped.push(key);
      }
    }
    if (schedulerOptions.length > 0 && !backend.capabilities.schedulerOptions) {
      schedulerOptions = [];
      dropped.push('schedulerOptions');
    }
  }
  return { spec: { ...spec, resources, schedulerOptions }, dropped };
}

/** The message a `warn` profile gives for what it dropped. */
export function droppedMessage(profile: Profile, backend: BackendV1, dropped: string[]): string {
  return `the ${backend.id} backend of profile "${profile.name}" cannot honour ${dropped.join(', ')}; left out (unsupportedResources: warn)`;
}

/**
 * Every problem with a profile's defaults: values as a submit's are checked, and, unless the
 * profile drops what its backend cannot honour, each default the backend could not honour.
 */
export function defaultsIssues(profile: Profile, backend: BackendV1): ValidationIssue[] {
  const defaults = profile.defaults;
  if (!defaults) return [];
  const issues = validateJobSpec({
    argv: ['-'],
    ...(defaults.resources ? { resources: defaults.resources } : {}),
    ...(defaults.schedulerOptions ? { schedulerOptions: defaults.schedulerOptions } : {}),
  }).map((issue) => ({ path: `defaults.${issue.path}`, message: issue.message }));
  if ((profile.unsupportedResources ?? 'refuse') !== 'refuse') return issues;
  const supported = new Set<string>(backend.capabilities.resources);
  for (const key of Object.keys(defaults.resources ?? {})) {
    if (!supported.has(key))
      issues.push({
        path: `defaults.resources.${key}`,
        message: `the ${backend.id} backend cannot honour ${key} (it supports: ${[...supported].join(', ') || 'none'}); remove it, or set unsupportedResources to warn or ignore`,
      });
  }
  if ((defaults.schedulerOptions?.length ?? 0) > 0 && !backend.capabilities.schedulerOptions)
    issues.push({
      path: 'defaults.schedulerOptions',
      message: `the ${backend.id} backend takes no scheduler options`,
    });
  return issues;
}
