/** What a job's container must be before anything runs: its fields and binds, the profile's defaults merged with the job's own, and where binds may point on the target. */
import type { ValidationIssue } from '../errors/validation-error.js';
import {
  CONTAINER_RUNTIMES,
  type ContainerRuntime,
  type ContainerSpec,
  type ResolvedContainer,
} from '../spec/container.js';
import { checkText } from './validate-fields.js';
import { checkVariables } from './validate-variables.js';

/** One bind mount, its paths normalised (no `.`, `..`, repeated or trailing `/`). */
export interface BindMount {
  readonly source: string;
  readonly destination: string;
  readonly mode: 'ro' | 'rw';
}

const FIELDS = new Set(['runtime', 'image', 'binds', 'gpus', 'env']);
/** The kernel's own trees: a bind over them would hand the job the host's devices or state. */
const FORBIDDEN_DESTINATIONS = ['/proc', '/sys', '/dev'];
/** A local image reference or id as podman takes it; never starting with `-`. */
const PODMAN_IMAGE = /^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$/;
/** A CDI device name (`vendor.com/class=name`), as podman's `--device` takes it. */
const CDI_DEVICE = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9._-]+)+=[A-Za-z0-9._:-]+$/;

const BIND_FORM = 'must be SRC:DST, SRC:DST:ro or SRC:DST:rw';

/** Whether `path` is `base` or inside it (both normalised). */
export function isWithin(path: string, base: string): boolean {
  return base === '/' || path === base || path.startsWith(`${base}/`);
}

/**
 * A path a runtime is handed: absolute, one line, no `:` or `,` (both runtimes split bind
 * lists on them), no `.` or `..` part. Returns it normalised, or the issue.
 */
function containerPath(value: string, path: string, what: string): string | ValidationIssue {
  const text = checkText(value, path);
  if (text.length > 0) return text[0] as ValidationIssue;
  if (!value.startsWith('/'))
    return { path, message: `the ${what} "${value}" must be an absolute path (starting with "/")` };
  if (/[:,]/.test(value))
    return {
      path,
      message: `the ${what} "${value}" may not contain ":" or "," (the runtimes split binds on them); bind a directory whose path has neither`,
    };
  const parts = value.split('/').filter((part) => part !== '');
  if (parts.some((part) => part === '.' || part === '..'))
    return {
      path,
      message: `the ${what} "${value}" may not contain "." or ".." parts; write the path it means`,
    };
  return `/${parts.join('/')}`;
}

/** Parse one bind, `SRC:DST[:ro|rw]`; the issues name `path` and say how to fix it. */
export function parseBind(value: unknown, path: string): BindMount | ValidationIssue[] {
  if (typeof value !== 'string') return [{ path, message: `${BIND_FORM} (a string)` }];
  const parts = value.split(':');
  if (parts.length < 2 || parts.length > 3)
    return [
      {
        path,
        message: `${BIND_FORM}, got "${value}" (neither path may contain ":")`,
      },
    ];
  const [rawSource, rawDestination, rawMode = 'ro'] = parts as [string, string, string?];
  if (rawMode.startsWith('/'))
    return [{ path, message: `${BIND_FORM}, got "${value}" (neither path may contain ":")` }];
  const issues: ValidationIssue[] = [];
  if (rawMode !== 'ro' && rawMode !== 'rw')
    issues.push({ path, message: `the mode "${rawMode}" must be ro or rw` });
  const source = containerPath(rawSource, path, 'source');
  const destination = containerPath(rawDestination, path, 'destination');
  if (typeof source !== 'string') issues.push(source);
  if (typeof destination !== 'string') issues.push(destination);
  else if (destination === '/')
    issues.push({ path, message: 'the destination may not be "/"; bind under a directory' });
  else {
    const kernel = FORBIDDEN_DESTINATIONS.find((base) => isWithin(destination, base));
    if (kernel)
      issues.push({
        path,
        message: `the destination ${destination} is under ${kernel}, which the runtime provides itself; choose another destination`,
      });
  }
  if (issues.length > 0 || typeof source !== 'string' || typeof destination !== 'string')
    return issues;
  return { source, destination, mode: rawMode as 'ro' | 'rw' };
}

/** The text of a bind, normalised: `SRC:DST:MODE`. */
export function formatBind(bind: BindMount): string {
  return `${bind.source}:${bind.destination}:${bind.mode}`;
}

/** The image for `runtime`: a `.sif` path (apptainer) or a local reference (podman). */
function checkImage(image: unknown, runtime: ContainerRuntime | undefined, path: string) {
  const text = checkText(image, path);
  if (text.length > 0) return text;
  const value = image as string;
  if (runtime === 'apptainer') {
    const checked = containerPath(value, path, 'image');
    return typeof checked === 'string' ? [] : [checked];
  }
  if (runtime === 'podman' && !PODMAN_IMAGE.test(value))
    return [
      {
        path,
        message: `"${value}" is not a local image reference (letters, digits and . _ / : @ -, not starting with "-"); name an image already on the target, e.g. localhost/pipeline:1.0`,
      },
    ];
  return [];
}

/** The container's own fields (as a job or a profile gives them), each problem by its dot path. */
export function validateContainerFields(value: unknown, path: string): ValidationIssue[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [{ path, message: 'must be an object: { runtime, image, binds, gpus, env }' }];
  const spec = value as ContainerSpec;
  const issues: ValidationIssue[] = [];
  for (const key of Object.keys(spec))
    if (!FIELDS.has(key))
      issues.push({
        path: `${path}.${key}`,
        message: `is not a container field; known: ${[...FIELDS].join(', ')}`,
      });
  if (spec.runtime !== undefined && !CONTAINER_RUNTIMES.includes(spec.runtime))
    issues.push({
      path: `${path}.runtime`,
      message: `must be one of ${CONTAINER_RUNTIMES.join(', ')}`,
    });
  if (spec.image !== undefined)
    issues.push(...checkImage(spec.image, spec.runtime, `${path}.image`));
  if (spec.binds !== undefined) {
    if (!Array.isArray(spec.binds))
      issues.push({ path: `${path}.binds`, message: 'must be a list of SRC:DST[:ro|rw]' });
    else
      spec.binds.forEach((bind, index) => {
        const parsed = parseBind(bind, `${path}.binds.${index}`);
        if (Array.isArray(parsed)) issues.push(...parsed);
      });
  }
  if (
    spec.gpus !== undefined &&
    typeof spec.gpus !== 'boolean' &&
    !(typeof spec.gpus === 'string' && CDI_DEVICE.test(spec.gpus))
  )
    issues.push({
      path: `${path}.gpus`,
      message: 'must be true, false, or a CDI device for podman such as nvidia.com/gpu=0',
    });
  issues.push(...checkVariables(spec.env, `${path}.env`));
  return issues;
}

/**
 * The job's container with the profile's defaults under it: what the job gives wins, its binds
 * follow the profile's (a bind both give is mounted once), its env is laid over the profile's. `null` when the job asks for none
 * (`container: null`) or neither gives an image; issues when the result cannot run.
 */
export function resolveContainer(
  job: ContainerSpec | null | undefined,
  profile: ContainerSpec | undefined,
): { container: ResolvedContainer | null; issues: ValidationIssue[] } {
  if (job === null || (job === undefined && profile?.image === undefined))
    return { container: null, issues: [] };
  const runtime = job?.runtime ?? profile?.runtime;
  const image = job?.image ?? profile?.image;
  const issues: ValidationIssue[] = [];
  if (image === undefined)
    issues.push({
      path: 'container.image',
      message:
        'is required to run in a container (--container-image, or the profile’s container.image)',
    });
  if (runtime === undefined)
    issues.push({
      path: 'container.runtime',
      message: `is required: ${CONTAINER_RUNTIMES.join(' or ')} (--container-runtime, or the profile’s container.runtime)`,
    });
  if (issues.length > 0 || runtime === undefined || image === undefined)
    return { container: null, issues };
  issues.push(...checkImage(image, runtime, 'container.image'));
  const binds: string[] = [];
  for (const [index, bind] of [...(profile?.binds ?? []), ...(job?.binds ?? [])].entries()) {
    const parsed = parseBind(bind, `container.binds.${index}`);
    if (Array.isArray(parsed)) issues.push(...parsed);
    else if (!binds.includes(formatBind(parsed))) binds.push(formatBind(parsed));
  }
  const gpus = job?.gpus ?? profile?.gpus ?? false;
  if (runtime === 'apptainer' && typeof gpus === 'string')
    issues.push({
      path: 'container.gpus',
      message: 'apptainer takes true or false (it gives the container the GPUs with --nv)',
    });
  const env = { ...(profile?.env ?? {}), ...(job?.env ?? {}) };
  return { container: { runtime, image: image as string, binds, gpus, env }, issues };
}

/** The binds of a resolved container, parsed (they were checked when it was resolved). */
export function containerBinds(container: ResolvedContainer): BindMount[] {
  return container.binds.flatMap((bind, index) => {
    const parsed = parseBind(bind, `container.binds.${index}`);
    return Array.isArray(parsed) ? [] : [parsed];
  });
}

/** The longest line podman's --env-file reads (`NAME=value`, bytes; measured with podman 4.3). */
export const PODMAN_ENV_LINE_MAX_BYTES = 65_535;

/** What keeps one variable (`NAME=value`) from podman's --env-file, or null. */
function envFileProblem(name: string, value: string): string | null {
  if (/[\r\n]/.test(value))
    return 'holds a line break, which podman’s --env-file cannot carry into the container; encode it (e.g. base64) and decode it inside';
  const bytes = Buffer.byteLength(`${name}=${value}`);
  if (bytes > PODMAN_ENV_LINE_MAX_BYTES)
    return `is ${bytes} bytes as NAME=value, more than the ${PODMAN_ENV_LINE_MAX_BYTES} podman’s --env-file reads in one line; pass it in a file instead (a bind, or the settings file)`;
  return null;
}

/**
 * Variables and secrets podman cannot carry. yonder hands every one of them to podman on a pipe
 * (`--env-file`), never on its command line (which every user can read in /proc), and that file
 * holds one variable a line of at most PODMAN_ENV_LINE_MAX_BYTES: a value with a line break
 * would be cut, a longer line refused. Fields: `secrets.NAME`, `env.NAME` (the job's `--env`),
 * `container.env.NAME` (`--container-env` and the profile's). apptainer takes them from the
 * environment, whole.
 */
export function containerSecretIssues(
  container: ResolvedContainer,
  secrets: Readonly<Record<string, string>>,
  env: Readonly<Record<string, string>> = {},
): ValidationIssue[] {
  if (container.runtime !== 'podman') return [];
  const fields: [string, Readonly<Record<string, string>>][] = [
    ['secrets', secrets],
    ['env', env],
    ['container.env', container.env],
  ];
  return fields.flatMap(([field, variables]) =>
    Object.entries(variables).flatMap(([name, value]) => {
      const message = envFileProblem(name, value);
      return message === null ? [] : [{ path: `${field}.${name}`, message }];
    }),
  );
}

/**
 * Where binds may point once the job's directory on the target is known: the job's own
 * directory is bound by yonder (read-write, at the same path), so no bind may take its source
 * from inside the work directory that holds every job's directory, nor hide the job's directory
 * inside the container; and that directory's own path must be one a runtime can bind.
 */
export function containerPlacementIssues(
  container: ResolvedContainer,
  place: { readonly workdir: string; readonly jobDir: string },
): ValidationIssue[] {
  if (/[:,\r\n]/.test(place.jobDir))
    return [
      {
        path: 'workdir',
        message: `the job directory ${place.jobDir} holds ":", "," or a line break, so a container runtime cannot bind it; set a workdir without them`,
      },
    ];
  const issues: ValidationIssue[] = [];
  containerBinds(container).forEach((bind, index) => {
    const path = `container.binds.${index}`;
    if (isWithin(bind.source, place.workdir))
      issues.push({
        path,
        message: `the source ${bind.source} is inside yonder's work directory ${place.workdir}; yonder binds the job's own directory itself (read-write, at ${place.jobDir}): bind something else`,
      });
    if (isWithin(bind.destination, place.jobDir))
      issues.push({
        path,
        message: `the destination ${bind.destination} would hide the job's directory ${place.jobDir}, which yonder binds there itself; choose another destination`,
      });
  });
  return issues;
}
