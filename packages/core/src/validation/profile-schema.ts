/** The schema of the fields every profile has, the check of a value against a TypeBox schema as dot-path issues, and the validation of those common fields. */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import type { ValidationIssue } from '../errors/validation-error.js';
import type { Profile } from '../spec/profile.js';
import { checkPlainData } from './reserved-keys.js';
import { createSchemaCheck } from './schema-check.js';
import { validateContainerFields } from './validate-container.js';
import {
  checkAbsolutePath,
  checkHost,
  checkText,
  PLUGIN_ID_PATTERN,
  PROFILE_NAME_PATTERN,
} from './validate-fields.js';

/** A profile's defaults for every submit through it (strict). */
export const ProfileDefaultsSchema = Type.Object(
  {
    resources: Type.Optional(
      Type.Object(
        {
          time: Type.Optional(
            Type.String({ description: 'Wall-clock limit, e.g. 30, 1:00:00, 2-00.' }),
          ),
          cpus: Type.Optional(Type.Integer({ minimum: 1 })),
          memory: Type.Optional(Type.String({ description: 'Memory per node: 512M, 4G…' })),
          gpus: Type.Optional(Type.Integer({ minimum: 0 })),
          nodes: Type.Optional(Type.Integer({ minimum: 1 })),
          partition: Type.Optional(Type.String()),
          account: Type.Optional(Type.String()),
          qos: Type.Optional(Type.String()),
        },
        {
          additionalProperties: false,
          description: 'Resources a submit gets unless it names them.',
        },
      ),
    ),
    schedulerOptions: Type.Optional(
      Type.Array(Type.String(), {
        description: 'Scheduler options put before the submit’s own, one argument each.',
      }),
    ),
  },
  { additionalProperties: false, description: 'Defaults for every submit through the profile.' },
);

/** A profile's container defaults (`ContainerSpec`); each field is checked further by `validateContainerFields`. */
const ContainerDefaultsSchema = Type.Object(
  {
    runtime: Type.Optional(
      Type.Union([Type.Literal('apptainer'), Type.Literal('podman')], {
        description: 'The container runtime: apptainer or podman.',
      }),
    ),
    image: Type.Optional(
      Type.String({
        description:
          'The image on the target, never pulled: a .sif path (apptainer), a local image (podman).',
      }),
    ),
    binds: Type.Optional(
      Type.Array(Type.String(), {
        description: 'Bind mounts SRC:DST[:ro|rw] (default ro); absolute paths without : or ,.',
      }),
    ),
    gpus: Type.Optional(
      Type.Union([Type.Boolean(), Type.String()], {
        description: 'true: the GPUs (apptainer --nv, podman nvidia.com/gpu=all); or a CDI device.',
      }),
    ),
    env: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description: 'Variables set inside the container.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'The container jobs of this profile run in by default.',
  },
);

/** The fields every profile has, whatever its backend. Strict: unknown keys are refused. */
export const ProfileSchema = Type.Object(
  {
    name: Type.String({
      description: 'The profile name: letters, digits, space . _ -; at most 64.',
    }),
    backend: Type.String({
      description: 'The backend id: local, ssh, slurm, command, or a plugin’s.',
    }),
    transport: Type.Optional(
      Type.String({
        description:
          'The transport id: local, or a plugin’s; default: with a host, the backend’s own, else local.',
      }),
    ),
    host: Type.Optional(
      Type.String({ description: 'Host, or an alias the transport knows (an ssh config Host).' }),
    ),
    workdir: Type.Optional(
      Type.String({ description: 'Absolute directory on the target for job directories.' }),
    ),
    localRoot: Type.Optional(
      Type.String({ description: 'Local dataset root mapped to remoteRoot.' }),
    ),
    remoteRoot: Type.Optional(
      Type.String({ description: 'The same dataset root as seen on the target.' }),
    ),
    pendingTimeoutSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2_592_000,
        description: 'Fail a job still pending after this long.',
      }),
    ),
    pollSeconds: Type.Optional(
      Type.Number({
        minimum: 1,
        maximum: 3600,
        description: 'Polling interval for wait and follow.',
      }),
    ),
    cancelGraceSeconds: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 3600,
        description: 'Seconds between the polite and the forceful cancel.',
      }),
    ),
    retentionSeconds: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: 315_360_000,
        description:
          'Forget finished jobs (record and job directory) this many seconds after they ended.',
      }),
    ),
    transportOptions: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'Transport options, checked against the chosen transport’s schema.',
      }),
    ),
    ssh: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'Deprecated: the ssh settings older versions stored; read as transportOptions (with a host).',
        deprecated: true,
      }),
    ),
    options: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Backend options.' }),
    ),
    defaults: Type.Optional(ProfileDefaultsSchema),
    unsupportedResources: Type.Optional(
      Type.Union([Type.Literal('refuse'), Type.Literal('warn'), Type.Literal('ignore')], {
        description:
          'What a submit does with resources or scheduler options the backend cannot honour: refuse the job (default), drop them with a warning, or drop them silently.',
      }),
    ),
    container: Type.Optional(ContainerDefaultsSchema),
  },
  { additionalProperties: false, $id: 'https://yonder.dev/schema/profile.json' },
);

export type ProfileFields = Static<typeof ProfileSchema>;

/** JSON pointer (`/options/x`) to dot path (`options.x`). */
export function pointerToPath(pointer: string, prefix = ''): string {
  const path = pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
  return prefix ? (path ? `${prefix}.${path}` : prefix) : path;
}

/** Check a value against a TypeBox schema; the issues as dot paths. */
export function checkSchema(schema: TSchema, value: unknown, prefix = ''): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const error of Value.Errors(schema, value)) {
    const path = pointerToPath(error.path, prefix);
    if (error.type === ValueErrorType.ObjectAdditionalProperties) {
      // The path names the one unknown field; the message lists those that are known.
      const known = Object.keys((error.schema as { properties?: object }).properties ?? {});
      issues.push({
        path,
        message:
          known.length > 0
            ? `unknown field (known fields: ${known.join(', ')})`
            : `unknown field (${error.message.toLowerCase()})`,
      });
      continue;
    }
    issues.push({ path: path || prefix, message: error.message.toLowerCase() });
  }
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = `${issue.path}\0${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The profile schema's check, compiled once many profiles were checked (every job record holds a profile). */
const profileCheck = createSchemaCheck(ProfileSchema);

/**
 * Validate the fields every profile has (the backend's own options are checked by the backend).
 * Returns every problem as a dot path and a message that says how to fix it.
 */
export function validateProfileFields(profile: unknown): ValidationIssue[] {
  if (typeof profile !== 'object' || profile === null || Array.isArray(profile)) {
    return [{ path: '', message: 'a profile must be a JSON object' }];
  }
  const reserved = checkPlainData(profile, '');
  if (reserved.length > 0) return reserved;
  const issues = profileCheck(profile) ? [] : checkSchema(ProfileSchema, profile);
  const value = profile as Partial<Profile>;
  if (typeof value.name === 'string') {
    const text = checkText(value.name, 'name');
    if (text.length > 0) issues.push(...text);
    else if (!PROFILE_NAME_PATTERN.test(value.name)) {
      issues.push({
        path: 'name',
        message:
          'must begin with a letter or digit and contain only letters, digits, spaces, ".", "_" or "-" (at most 64)',
      });
    }
  }
  if (typeof value.backend === 'string' && !PLUGIN_ID_PATTERN.test(value.backend)) {
    issues.push({
      path: 'backend',
      message: 'must be a backend id such as "local", "slurm", "ssh" or "command"',
    });
  }
  if (typeof value.transport === 'string' && !PLUGIN_ID_PATTERN.test(value.transport)) {
    issues.push({ path: 'transport', message: 'must be a transport id such as "local"' });
  }
  if (typeof value.host === 'string') issues.push(...checkHost(value.host, 'host'));
  if (typeof value.workdir === 'string')
    issues.push(...checkAbsolutePath(value.workdir, 'workdir'));
  const hasLocal = typeof value.localRoot === 'string' && value.localRoot !== '';
  const hasRemote = typeof value.remoteRoot === 'string' && value.remoteRoot !== '';
  if (hasLocal !== hasRemote) {
    issues.push({
      path: hasLocal ? 'remoteRoot' : 'localRoot',
      message: 'set both localRoot and remoteRoot, or neither',
    });
  }
  if (hasLocal) {
    const local = value.localRoot as string;
    const text = checkText(local, 'localRoot');
    if (text.length > 0) issues.push(...text);
    else if (!local.startsWith('/') && !local.startsWith('~')) {
      issues.push({ path: 'localRoot', message: 'must be an absolute path' });
    }
  }
  if (hasRemote) issues.push(...checkAbsolutePath(value.remoteRoot, 'remoteRoot'));
  if (typeof value.container === 'object' && value.container !== null)
    issues.push(
      ...validateContainerFields(value.container, 'container').filter(
        (issue) => !issues.some((known) => known.path === issue.path),
      ),
    );
  return issues;
}
