/** The submit pipeline: check the specs, put every job in the ledger as `submitting`, ask the backend (in one batch when it can), and record what came back. */
import { createHash, randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import { assertValid, type ValidationIssue } from '../errors/validation-error.js';
import { toYonderError, YonderError } from '../errors/yonder-error.js';
import type { JsonObject } from '../json/json-value.js';
import { mapSettingsPaths } from '../paths/map-paths.js';
import { currentProcessIdentity } from '../process/process-identity.js';
import type {
  BackendContextV1,
  BackendV1,
  SubmitRequestV1,
  SubmitResultV1,
} from '../spec/backend/v1/backend-v1.js';
import type { JobRecord, JobSpec } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import { transition } from '../state/apply-observation.js';
import { containerSecretIssues, resolveContainer } from '../validation/validate-container.js';
import { validateJobSpec } from '../validation/validate-job-spec.js';
import {
  heldSettingsText,
  holdJob,
  resolveDependencies,
  settleWaitingJobs,
} from './dependencies.js';
import { jobRoute } from './job-route.js';
import type { ManagerContext } from './manager-context.js';
import { normaliseProfile } from './normalise-profile.js';
import { applyProfileDefaults, droppedMessage } from './profile-defaults.js';
import { readProfile } from './profiles.js';

type Outcome = SubmitResultV1 | { readonly error: unknown };

/** How jobs are submitted. */
export interface SubmitOptions {
  /** The profile's name; default `local`. */
  profile?: string;
  /** Told what a `warn` profile left out of the job at `index` (its backend cannot honour it). */
  onWarning?: (message: string, index: number) => void;
  /**
   * What `#N` in a spec's `after` names: the job at the index whose number here is N (a batch
   * file's line numbers); default its position, from 1.
   */
  numbers?: readonly number[];
  /**
   * Stop sending once aborted (Ctrl-C): a job being sent is finished and recorded, the jobs not
   * yet sent leave no record, and the result holds only the jobs that were sent (a prefix of
   * the specs; with a backend's `submitMany`, all of them or none).
   */
  signal?: AbortSignal;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Submit jobs through one profile. Every job is in the ledger before the backend is asked, so
 * an interrupted submit is found again, never forgotten. With `single`, issue paths are the
 * spec's own and the first failure is thrown; otherwise paths start with the job's index and
 * a job the target refused comes back `failed` with its error.
 * @throws ValidationError `E_INVALID_JOB_SPEC` before anything is submitted.
 */
export async function submitJobs(
  context: ManagerContext,
  given: readonly JobSpec[],
  options: SubmitOptions,
  single: boolean,
): Promise<JobRecord[]> {
  const profile = await readProfile(context, options.profile ?? 'local');
  const backend = await context.resolveBackend(profile.backend, profile);
  const issues: ValidationIssue[] = [];
  // The profile's defaults first, then its policy for what the backend cannot honour.
  const specs = given.map((spec, index) => {
    const effective = applyProfileDefaults(spec, profile, backend);
    if (effective.dropped.length > 0 && profile.unsupportedResources === 'warn')
      options.onWarning?.(droppedMessage(profile, backend, effective.dropped), index);
    return effective.spec;
  });
  const ids = specs.map(() => randomBytes(6).toString('hex'));
  const dependencies = await resolveDependencies(context, specs, ids, options.numbers, single);
  specs.forEach((spec, index) => {
    const found = [...specIssues(spec, backend, profile), ...(dependencies.issues[index] ?? [])];
    for (const issue of found) {
      issues.push(single ? issue : { path: `jobs.${index}.${issue.path}`, message: issue.message });
    }
  });
  assertValid(
    'E_INVALID_JOB_SPEC',
    specs.length === 1 ? 'The job cannot be submitted' : 'The jobs cannot be submitted',
    issues,
  );
  // The transport is found, and the options checked, before anything is written: a profile
  // whose transport is missing or whose options do not fit leaves no record behind.
  const backendContext = await context.backendContext(profile, backend);
  const prepared: Array<{ record: JobRecord; request: SubmitRequestV1 }> = [];
  for (const [index, spec] of specs.entries()) {
    const { record, settingsText } = newRecord(
      context,
      ids[index] as string,
      spec,
      profile,
      backend,
      backendContext.options,
    );
    await context.store.createJob(record);
    // Kept beside the record (as given, before path mapping), so the job can be submitted again.
    if (spec.settings !== undefined && context.store.saveJobSettings)
      await context.store.saveJobSettings(record.id, `${JSON.stringify(spec.settings)}\n`);
    prepared.push({ record, request: submitRequest(record, spec.secrets ?? {}, settingsText) });
  }
  // Every job of the batch is in the ledger, with its settings, before any is held back or
  // submitted: a dependent is released only once all it needs is there.
  const held = new Map<string, JobRecord>();
  for (const [index, { record }] of prepared.entries()) {
    const after = dependencies.after[index];
    if (!after || after.length === 0) continue;
    held.set(
      record.id,
      await context.store.updateJob(record.id, (job) => holdJob(job, after, context.now())),
    );
  }
  const { records: sent, firstError } = await sendSubmits(
    context,
    backend,
    backendContext,
    prepared.filter(({ record }) => !held.has(record.id)),
    options.signal,
  );
  const byId = new Map(sent.map((record) => [record.id, record]));
  if (options.signal?.aborted) {
    // Interrupted (Ctrl-C): the jobs before the first one not sent stand; that one and every
    // later one, held ones too (none of them was sent), leave no record.
    const cut = prepared.findIndex(({ record }) => !byId.has(record.id) && !held.has(record.id));
    if (cut >= 0) {
      for (const { record } of prepared.slice(cut)) await forgetUnsent(context, record.id, backend);
      prepared.splice(cut);
    }
  }
  if (held.size > 0) await settleWaitingJobs(context, (jobs) => releaseHeldJobs(context, jobs));
  const records: JobRecord[] = [];
  for (const { record } of prepared)
    records.push(
      byId.get(record.id) ??
        (await context.store.getJob(record.id)) ??
        (held.get(record.id) as JobRecord),
    );
  if (single && firstError) throw firstError;
  return records;
}

/** Ask the backend to start prepared jobs and record each answer: submitted, or failed with its error. */
async function sendSubmits(
  context: ManagerContext,
  backend: BackendV1,
  backendContext: BackendContextV1,
  prepared: ReadonlyArray<{ record: JobRecord; request: SubmitRequestV1 }>,
  signal?: AbortSignal,
): Promise<{ records: JobRecord[]; firstError: YonderError | null }> {
  if (prepared.length === 0) return { records: [], firstError: null };
  const outcomes = await askBackend(
    backend,
    prepared.map((entry) => entry.request),
    backendContext,
    signal,
  );
  const records: JobRecord[] = [];
  let firstError: YonderError | null = null;
  for (const [index, { record }] of prepared.entries()) {
    // Not sent, the submit being interrupted: the caller forgets it.
    if (index >= outcomes.length && signal?.aborted) continue;
    const outcome = outcomes[index] ?? {
      error: new YonderError(
        'E_INTERNAL',
        `The ${backend.id} backend gave no answer for this job.`,
      ),
    };
    if ('error' in outcome) {
      const failure = toYonderError(outcome.error, 'E_SUBMIT_FAILED');
      firstError ??= failure;
      records.push(await recordSubmitFailure(context, record.id, failure, backend));
    } else {
      records.push(
        await context.store.updateJob(record.id, (job) =>
          applySubmitResult(job, outcome, 'submit', context.now()),
        ),
      );
    }
  }
  return { records, firstError };
}

/**
 * Submit dependents that waited and were claimed by this process (`submitting`, this
 * process's): through the profile they were submitted with, one call per target. Secrets a
 * dependent never has (refused at submit); its settings come from beside its record.
 */
export async function releaseHeldJobs(
  context: ManagerContext,
  jobs: readonly JobRecord[],
): Promise<void> {
  const groups = new Map<string, JobRecord[]>();
  for (const job of jobs) groups.set(jobRoute(job), [...(groups.get(jobRoute(job)) ?? []), job]);
  for (const group of groups.values()) {
    const first = group[0] as JobRecord;
    let backend: BackendV1;
    let backendContext: BackendContextV1;
    try {
      backend = await context.resolveBackend(first.backend, first.profileSnapshot);
      backendContext = await context.backendContext(first.profileSnapshot, backend);
    } catch (error) {
      // Nothing was sent (the backend or its transport could not be had): the jobs wait again,
      // with the error, for the next refresh to try.
      const failure = toYonderError(error).toJSON();
      for (const record of group)
        await context.store.updateJob(record.id, (current) =>
          current.state === 'submitting' && current.submittedAt === null && current.after
            ? { ...holdJob(current, current.after, context.now()), error: failure }
            : undefined,
        );
      continue;
    }
    const prepared: Array<{ record: JobRecord; request: SubmitRequestV1 }> = [];
    for (const record of group) {
      try {
        prepared.push({
          record,
          request: submitRequest(record, {}, await heldSettingsText(context, record)),
        });
      } catch (error) {
        await recordSubmitFailure(context, record.id, toYonderError(error), backend);
      }
    }
    await sendSubmits(context, backend, backendContext, prepared);
  }
}

/**
 * A job whose submit was stopped before it was sent: nothing of it exists on the target, so
 * nothing of it stays in the ledger (a store that cannot forget records it failed, saying so).
 */
async function forgetUnsent(
  context: ManagerContext,
  id: string,
  backend: BackendV1,
): Promise<void> {
  if (context.store.removeJob) {
    await context.store.removeJob(id);
    return;
  }
  await recordSubmitFailure(
    context,
    id,
    new YonderError(
      'E_SUBMIT_FAILED',
      'The submit was interrupted before this job was sent; nothing ran.',
    ),
    backend,
  );
}

/**
 * One batch call when the backend has `submitMany` and there are several jobs, else one call
 * each; once `signal` is aborted no further call is made (the outcomes are then fewer).
 */
async function askBackend(
  backend: BackendV1,
  requests: readonly SubmitRequestV1[],
  backendContext: BackendContextV1,
  signal?: AbortSignal,
): Promise<readonly Outcome[]> {
  if (signal?.aborted) return [];
  if (backend.submitMany && requests.length > 1) {
    try {
      return await backend.submitMany(requests, backendContext);
    } catch (error) {
      return requests.map(() => ({ error }));
    }
  }
  const outcomes: Outcome[] = [];
  for (const request of requests) {
    if (signal?.aborted) break;
    try {
      outcomes.push(await backend.submit(request, backendContext));
    } catch (error) {
      outcomes.push({ error });
    }
  }
  return outcomes;
}

/** The job's container: its own over the profile's defaults (checked by `specIssues`). */
function containerOf(spec: JobSpec, profile: Profile) {
  return resolveContainer(spec.container, profile.container).container;
}

/** Everything wrong with a job's container for this backend and profile. */
function containerIssues(spec: JobSpec, backend: BackendV1, profile: Profile): ValidationIssue[] {
  const { container, issues } = resolveContainer(spec.container, profile.container);
  if (container === null) return issues;
  const runtimes = backend.capabilities.containers ?? [];
  if (!runtimes.includes(container.runtime))
    issues.push({
      path: 'container.runtime',
      message:
        runtimes.length === 0
          ? `the ${backend.id} backend cannot run jobs in containers; submit without one or use a local, ssh or slurm profile`
          : `the ${backend.id} backend runs ${runtimes.join(' and ')} containers, not ${container.runtime}`,
    });
  issues.push(...containerSecretIssues(container, spec.secrets ?? {}, spec.env ?? {}));
  return issues;
}

/** Everything wrong with a job spec for this backend. */
function specIssues(spec: JobSpec, backend: BackendV1, profile: Profile): ValidationIssue[] {
  const issues = validateJobSpec(spec);
  if (issues.length === 0) issues.push(...containerIssues(spec, backend, profile));
  const supported = new Set(backend.capabilities.resources);
  for (const [key, value] of Object.entries(spec.resources ?? {})) {
    if (value !== undefined && !supported.has(key as never)) {
      issues.push({
        path: `resources.${key}`,
        message: `the ${backend.id} backend cannot honour ${key} (it supports: ${[...supported].join(', ') || 'none'}); remove it or use a scheduler profile`,
      });
    }
  }
  if ((spec.after?.length ?? 0) > 0 && Object.keys(spec.secrets ?? {}).length > 0)
    issues.push({
      path: 'secrets',
      message:
        'a job that waits for others (after) cannot carry secrets: it is submitted later, by whichever yonder process finds its parents done, and yonder never keeps a secret; pass the value another way or submit it once its parents have ended',
    });
  if ((spec.schedulerOptions?.length ?? 0) > 0 && !backend.capabilities.schedulerOptions) {
    issues.push({
      path: 'schedulerOptions',
      message: `the ${backend.id} backend takes no scheduler options`,
    });
  }
  return issues;
}

/** A new ledger record for a job, in `submitting`, and its settings text after path mapping. */
function newRecord(
  context: ManagerContext,
  id: string,
  spec: JobSpec,
  profile: Profile,
  backend: BackendV1,
  options: JsonObject,
): { record: JobRecord; settingsText?: string } {
  const now = context.now().toISOString();
  let settingsText: string | undefined;
  if (spec.settings !== undefined) {
    const mapped = mapSettingsPaths(
      spec.settings,
      profile.localRoot ?? '',
      profile.remoteRoot ?? '',
    );
    settingsText = `${JSON.stringify(mapped, null, 2)}\n`;
  }
  const record: JobRecord = {
    id,
    name: spec.name ?? basename(spec.argv[0] as string),
    profile: profile.name,
    backend: backend.id,
    target: backend.targetKey(profile, options),
    state: 'submitting',
    nativeState: null,
    exitCode: null,
    signal: null,
    reason: null,
    failureKind: null,
    externalId: null,
    createdAt: now,
    updatedAt: now,
    submittedAt: null,
    finishedAt: null,
    error: null,
    history: [{ at: now, from: null, to: 'submitting', source: 'submit', nativeState: null }],
    cancel: null,
    misses: 0,
    pendingSince: null,
    spec: {
      argv: [...spec.argv],
      env: { ...(spec.env ?? {}) },
      secretNames: Object.keys(spec.secrets ?? {}),
      resources: { ...(spec.resources ?? {}) },
      schedulerOptions: [...(spec.schedulerOptions ?? [])],
      cwd: spec.cwd ?? null,
      settingsSha256: settingsText === undefined ? null : sha256(settingsText),
      container: containerOf(spec, profile),
    },
    profileSnapshot: profile,
    submitter: currentProcessIdentity(),
    data: {},
    revision: 0,
  };
  return settingsText === undefined ? { record } : { record, settingsText };
}

/** A submit that failed: failed now, unless the outcome is unknown and can be looked up later. */
function recordSubmitFailure(
  context: ManagerContext,
  id: string,
  failure: YonderError,
  backend: BackendV1,
): Promise<JobRecord> {
  const unknownOutcome = failure.code === 'E_TIMEOUT' || failure.code === 'E_TRANSPORT';
  // The target refused the job, or the backend refused its spec before sending it (a
  // scheduler option that changes submission itself): the submitter's, not the system's.
  const refused = failure.code === 'E_SUBMIT_REFUSED' || failure.code === 'E_INVALID_JOB_SPEC';
  return context.store.updateJob(id, (job) => {
    const base: JobRecord = {
      ...job,
      error: failure.toJSON(),
      submitter: null,
      updatedAt: context.now().toISOString(),
    };
    if (unknownOutcome && backend.capabilities.recoverSubmit) return base;
    return transition(
      base,
      'failed',
      {
        source: 'submit',
        reason: unknownOutcome
          ? 'submit-outcome-unknown'
          : refused
            ? 'submit-refused'
            : 'submit-failed',
        failureKind: refused ? 'submission' : 'infrastructure',
      },
      context.now(),
    );
  });
}

/** What the backend is asked to start (or, without secrets, to find again) for a ledger record. */
export function submitRequest(
  job: JobRecord,
  secrets: Record<string, string>,
  settingsText?: string,
): SubmitRequestV1 {
  return {
    id: job.id,
    name: job.name,
    marker: `yonder:${job.id}`,
    createdAt: job.createdAt,
    argv: job.spec.argv,
    ...(settingsText === undefined ? {} : { settingsText }),
    env: job.spec.env,
    secrets,
    resources: job.spec.resources,
    schedulerOptions: job.spec.schedulerOptions,
    ...(job.spec.cwd ? { cwd: job.spec.cwd } : {}),
    ...(job.spec.container ? { container: job.spec.container } : {}),
    profile: normaliseProfile(job.profileSnapshot),
  };
}

/** A record after the backend accepted the job (`source`: `submit`, or `recover` when found again). */
export function applySubmitResult(
  job: JobRecord,
  result: SubmitResultV1,
  source: string,
  now: Date,
): JobRecord {
  const base: JobRecord = {
    ...job,
    externalId: result.externalId,
    data: result.data as JsonObject,
    submittedAt: now.toISOString(),
    submitter: null,
    error: null,
    ...(result.containerImage ? { containerImage: result.containerImage } : {}),
  };
  return transition(
    base,
    result.state,
    { source, nativeState: result.nativeState ?? result.state },
    now,
  );
}
