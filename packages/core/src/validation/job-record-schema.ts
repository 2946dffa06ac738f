/** The TypeBox schema of a ledger record, checked on every read so a damaged record is reported, never acted on. */
import { type TSchema, Type } from '@sinclair/typebox';
import type { ValidationIssue } from '../errors/validation-error.js';
import { JOB_STATES } from '../state/job-states.js';
import { DEPENDENCY_CONDITIONS } from './parse-dependency.js';
import { checkSchema, validateProfileFields } from './profile-schema.js';
import { checkPlainData } from './reserved-keys.js';
import { createSchemaCheck } from './schema-check.js';

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** An ISO 8601 time as yonder writes them (`Date.prototype.toISOString`). */
const Time = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$' });
const State = Type.Union(JOB_STATES.map((state) => Type.Literal(state)));
const Count = Type.Integer({ minimum: 0 });

const TransitionSchema = Type.Object({
  at: Time,
  from: nullable(State),
  to: State,
  source: Type.String(),
  nativeState: nullable(Type.String()),
  reason: Type.Optional(nullable(Type.String())),
  startedAt: Type.Optional(Time),
});

const IdentitySchema = Type.Object({
  pid: Type.Integer(),
  startTime: Type.String(),
  bootId: Type.String(),
  host: Type.String(),
});

const ResourcesSchema = Type.Object(
  {
    time: Type.Optional(Type.String()),
    cpus: Type.Optional(Count),
    memory: Type.Optional(Type.String()),
    gpus: Type.Optional(Count),
    nodes: Type.Optional(Count),
    partition: Type.Optional(Type.String()),
    account: Type.Optional(Type.String()),
    qos: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const ContainerSchema = Type.Object(
  {
    runtime: Type.Union([Type.Literal('apptainer'), Type.Literal('podman')]),
    image: Type.String(),
    binds: Type.Array(Type.String()),
    gpus: Type.Union([Type.Boolean(), Type.String()]),
    env: Type.Record(Type.String(), Type.String()),
  },
  { additionalProperties: false },
);

/**
 * A job record as the ledger keeps it (`JobRecord`). Every field yonder reads is typed; fields
 * a newer yonder may add at the top level are allowed (and kept by updates); the profile
 * snapshot is checked as a profile is; `data` is the backend's own object.
 */
export const JobRecordSchema = Type.Object({
  id: Type.String({ pattern: '^[0-9a-f]{6,64}$' }),
  name: Type.String(),
  profile: Type.String(),
  backend: Type.String(),
  target: Type.String(),
  state: State,
  nativeState: nullable(Type.String()),
  exitCode: nullable(Type.Integer()),
  signal: nullable(Type.String()),
  reason: nullable(Type.String()),
  failureKind: nullable(
    Type.Union([
      Type.Literal('application'),
      Type.Literal('submission'),
      Type.Literal('infrastructure'),
    ]),
  ),
  externalId: nullable(Type.String()),
  createdAt: Time,
  updatedAt: Time,
  submittedAt: nullable(Time),
  finishedAt: nullable(Time),
  error: nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  history: Type.Array(TransitionSchema),
  cancel: nullable(
    Type.Object({
      requestedAt: Time,
      reason: Type.Union([Type.Literal('user'), Type.Literal('pending-timeout')]),
      lastSentAt: nullable(Time),
      reachedAt: Type.Optional(nullable(Time)),
      confirmedAt: Type.Optional(nullable(Time)),
    }),
  ),
  misses: Count,
  absentSince: Type.Optional(nullable(Time)),
  pendingSince: nullable(Time),
  spec: Type.Object({
    argv: Type.Array(Type.String(), { minItems: 1 }),
    env: Type.Record(Type.String(), Type.String()),
    secretNames: Type.Array(Type.String()),
    resources: ResourcesSchema,
    schedulerOptions: Type.Array(Type.String()),
    cwd: nullable(Type.String()),
    settingsSha256: nullable(Type.String()),
    container: Type.Optional(nullable(ContainerSchema)),
  }),
  containerImage: Type.Optional(
    nullable(Type.Object({ id: Type.String(), digest: nullable(Type.String()) })),
  ),
  profileSnapshot: Type.Object({ name: Type.String(), backend: Type.String() }),
  submitter: nullable(IdentitySchema),
  data: Type.Record(Type.String(), Type.Unknown()),
  logTail: Type.Optional(
    nullable(Type.Object({ at: Time, start: Count, end: Count, data: Type.String() })),
  ),
  after: Type.Optional(
    Type.Array(
      Type.Object({
        job: Type.String({ pattern: '^[0-9a-f]{6,64}$' }),
        when: Type.Union(DEPENDENCY_CONDITIONS.map((when) => Type.Literal(when))),
      }),
    ),
  ),
  revision: Count,
});

/** The record schema's check, compiled once many records were read (listing a large ledger checks every record). */
const recordCheck = createSchemaCheck(JobRecordSchema);

/**
 * Everything wrong with a value read as a job record, as dot paths: its schema, its profile
 * snapshot (checked as a profile is), reserved keys and nesting anywhere in it (unless
 * `plainDataChecked` says `parseJson` checked those).
 */
export function validateJobRecord(
  value: unknown,
  options: { plainDataChecked?: boolean } = {},
): ValidationIssue[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ path: '', message: 'a job record must be a JSON object' }];
  }
  // parseJson has walked it already when `plainDataChecked`: once per record is enough.
  const issues = options.plainDataChecked ? [] : checkPlainData(value, '');
  if (issues.length > 0) return issues;
  // The common case first: a valid record, checked without collecting errors.
  if (!recordCheck(value)) issues.push(...checkSchema(JobRecordSchema, value));
  const snapshot = (value as { profileSnapshot?: unknown }).profileSnapshot;
  if (typeof snapshot === 'object' && snapshot !== null) {
    for (const issue of validateProfileFields(snapshot)) {
      issues.push({
        path: issue.path ? `profileSnapshot.${issue.path}` : 'profileSnapshot',
        message: issue.message,
      });
    }
  }
  return issues;
}
