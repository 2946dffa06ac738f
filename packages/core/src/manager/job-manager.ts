import { createHash, randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertValid, type ValidationIssue } from '../errors/validation-error.js';
import { toYonderError, YonderError } from '../errors/yonder-error.js';
import type { JsonObject } from '../json/json-value.js';
import { mapSettingsPaths } from '../paths/map-paths.js';
import { currentProcessIdentity, isProcessAlive } from '../process/process-identity.js';
import type { Registry } from '../registry/registry.js';
import type {
  BackendContextV1,
  BackendJobV1,
  BackendV1,
  LogChunkV1,
  ObservationV1,
  ProbeReportV1,
  SubmitRequestV1,
  SubmitResultV1,
} from '../spec/backend/v1/backend-v1.js';
import type { JobRecord, JobSpec, JobState } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import type { StoreProblemV1, StoreV1 } from '../spec/store/v1/store-v1.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import {
  applyObservation,
  DEFAULT_STATE_POLICY,
  type StatePolicy,
  transition,
} from '../state/apply-observation.js';
import { isTerminal } from '../state/job-states.js';
import { checkSchema, validateProfileFields } from '../validation/profile-schema.js';
import { trimTrailingSlash } from '../validation/validate-fields.js';
import { validateJobSpec } from '../validation/validate-job-spec.js';

/** The profile used when none is named and `local` has not been saved. */
export const BUILTIN_LOCAL_PROFILE: Profile = Object.freeze({ name: 'local', backend: 'local' });

export interface JobManagerOptions {
  store: StoreV1;
  registry: Registry;
  /** yonder's local state directory, handed to backends. */
  stateDirectory: string;
  now?: () => Date;
  policy?: StatePolicy;
  /** Polls of one target closer together than this are shared, not repeated. Default 1000 ms. */
  minPollIntervalMs?: number;
  /** The longest one poll may hold its lease. Default 120 s. */
  leaseTtlMs?: number;
  /** Picks the transport for a profile. Default: `local` when there is no host, else `ssh`. */
  transportId?: (profile: Profile, backend: BackendV1) => string;
  /**
   * Find the backend (and make its transport available) for a profile, e.g. by loading the
   * package that provides it. Default: look it up in the registry.
   */
  resolveBackend?: (id: string, profile: Profile) => Promise<BackendV1>;
}

export interface RefreshOptions {
  /** Only these job ids (default: every active job). */
  ids?: readonly string[];
  /** Poll even if another process polled the target a moment ago. */
  force?: boolean;
}

export interface ListOptions {
  /** Every job in the ledger, not just active and recent ones. */
  all?: boolean;
  states?: readonly JobState[];
  profile?: string;
  refresh?: boolean;
  /** How many recent finished jobs to include without `all`. Default 20. */
  recent?: number;
}

export interface WaitOptions {
  timeoutMs?: number;
  /** Called whenever a job's state changes. */
  onChange?: (job: JobRecord) => void;
  signal?: AbortSignal;
}

/** Whether a change leaves a record as it was (ignoring bookkeeping the store sets). */
function unchanged(before: JobRecord, after: JobRecord): boolean {
  if (before === after) return true;
  return (
    JSON.stringify({ ...before, updatedAt: '', revision: 0 }) ===
    JSON.stringify({ ...after, updatedAt: '', revision: 0 })
  );
}

function newJobId(): string {
  return randomBytes(6).toString('hex');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function backendJob(job: JobRecord): BackendJobV1 {
  return {
    id: job.id,
    name: job.name,
    externalId: job.externalId,
    state: job.state,
    createdAt: job.createdAt,
    cancelRequested: job.cancel !== null,
    profile: job.profileSnapshot,
    data: job.data,
  };
}

/** Normalise what users type: trailing slashes on paths. */
function normaliseProfile(profile: Profile): Profile {
  const out: Profile = { ...profile };
  if (out.workdir) out.workdir = trimTrailingSlash(out.workdir);
  if (out.remoteRoot) out.remoteRoot = trimTrailingSlash(out.remoteRoot);
  if (out.localRoot && out.localRoot !== '/') out.localRoot = out.localRoot.replace(/\/+$/, '');
  return out;
}

/**
 * The only place that changes a job's state. Submits, refreshes (one batched poll per target,
 * shared between processes through a lease), cancels, waits and reads logs for every backend.
 */
export class JobManager {
  readonly store: StoreV1;
  readonly registry: Registry;
  readonly stateDirectory: string;
  private readonly now: () => Date;
  private readonly policy: StatePolicy;
  private readonly minPollIntervalMs: number;
  private readonly leaseTtlMs: number;
  private readonly transportId: (profile: Profile, backend: BackendV1) => string;
  private readonly transports = new Map<string, TransportV1>();
  private readonly resolveBackend: (id: string, profile: Profile) => Promise<BackendV1>;

  constructor(options: JobManagerOptions) {
    this.store = options.store;
    this.registry = options.registry;
    this.stateDirectory = options.stateDirectory;
    this.now = options.now ?? (() => new Date());
    this.policy = options.policy ?? DEFAULT_STATE_POLICY;
    this.minPollIntervalMs = options.minPollIntervalMs ?? 1000;
    this.leaseTtlMs = options.leaseTtlMs ?? 120_000;
    this.transportId =
      options.transportId ??
      ((profile, backend) =>
        backend.capabilities.host === 'none' || !profile.host ? 'local' : 'ssh');
    this.resolveBackend = options.resolveBackend ?? (async (id) => this.registry.backend(id));
  }

  // ---------------------------------------------------------------- profiles

  /** Every problem with a profile: common fields, the backend's schema and its own checks. */
  async validateProfile(input: Profile): Promise<ValidationIssue[]> {
    const issues = validateProfileFields(input);
    if (issues.length > 0) return issues;
    const profile = normaliseProfile(input);
    let backend: BackendV1;
    try {
      backend = await this.resolveBackend(profile.backend, profile);
    } catch (error) {
      return [{ path: 'backend', message: (error as Error).message }];
    }
    const result = checkSchema(backend.optionsSchema, profile.options ?? {}, 'options');
    if (backend.capabilities.host === 'required' && !profile.host) {
      result.push({ path: 'host', message: `the ${backend.id} backend needs a host (--host)` });
    }
    result.push(...backend.validateProfile(profile));
    return result;
  }

  /**
   * Validate and save a profile.
   * @throws ValidationError `E_INVALID_PROFILE` listing every problem.
   */
  async saveProfile(input: Profile): Promise<Profile> {
    const profile = normaliseProfile(input);
    assertValid(
      'E_INVALID_PROFILE',
      `Profile "${String(input.name)}" is invalid`,
      await this.validateProfile(profile),
    );
    await this.store.saveProfile(profile);
    return profile;
  }

  /**
   * The named profile; `local` falls back to the built-in one.
   * @throws YonderError `E_NO_SUCH_PROFILE`.
   */
  async profile(name: string): Promise<Profile> {
    const stored = await this.store.getProfile(name);
    if (stored) return stored;
    if (name.toLowerCase() === 'local') return BUILTIN_LOCAL_PROFILE;
    const { profiles } = await this.store.listProfiles();
    const names = [
      'local',
      ...profiles.map((p) => p.name).filter((n) => n.toLowerCase() !== 'local'),
    ];
    throw new YonderError(
      'E_NO_SUCH_PROFILE',
      `No profile named "${name}". Profiles: ${names.join(', ')}. Create one with: yonder profile add ${name} --backend BACKEND`,
    );
  }

  /** Validate a profile and reach its target. */
  async checkProfile(
    name: string,
  ): Promise<{ profile: Profile; issues: ValidationIssue[]; probe: ProbeReportV1 | null }> {
    const profile = await this.profile(name);
    const issues = await this.validateProfile(profile);
    if (issues.length > 0) return { profile, issues, probe: null };
    const backend = await this.resolveBackend(profile.backend, profile);
    const probe = await backend.probe(profile, this.context(profile, backend));
    return { profile, issues, probe };
  }

  // ---------------------------------------------------------------- jobs

  /**
   * Resolve a full id or an unambiguous prefix.
   * @throws YonderError `E_NO_SUCH_JOB` or `E_AMBIGUOUS_JOB`.
   */
  async resolve(reference: string): Promise<JobRecord> {
    const ref = reference.trim();
    if (!/^[0-9a-f]{1,64}$/i.test(ref)) {
      throw new YonderError(
        'E_NO_SUCH_JOB',
        `"${reference}" is not a job id (ids are hexadecimal, e.g. 3f9a1c2b7d4e).`,
      );
    }
    const id = ref.toLowerCase();
    const exact = await this.store.getJob(id);
    if (exact) return exact;
    const ids = await this.store.findJobIds(id);
    if (ids.length === 0) {
      throw new YonderError(
        'E_NO_SUCH_JOB',
        `No job matches "${reference}". "yonder list --all" shows every job.`,
      );
    }
    if (ids.length > 1) {
      throw new YonderError(
        'E_AMBIGUOUS_JOB',
        `"${reference}" matches ${ids.length} jobs (${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}); give more of the id.`,
      );
    }
    const job = await this.store.getJob(ids[0] as string);
    if (!job) throw new YonderError('E_NO_SUCH_JOB', `No job matches "${reference}".`);
    return job;
  }

  /**
   * Submit a job through a profile. The job is in the ledger (as `submitting`) before the
   * backend is asked, so an interrupted submit is found again, never forgotten.
   * @throws ValidationError `E_INVALID_JOB_SPEC`; YonderError from the backend.
   */
  async submit(spec: JobSpec, options: { profile?: string } = {}): Promise<JobRecord> {
    const [job] = await this.submitAll([spec], options, true);
    return job as JobRecord;
  }

  /**
   * Submit several jobs through one profile. Backends that can (`submitMany`) start them in one
   * round trip to the target. Every job is in the ledger before the backend is asked; a job
   * the target refused comes back `failed` with its error, the others are submitted.
   * @throws ValidationError `E_INVALID_JOB_SPEC` (paths start with the job's index) before anything is submitted.
   */
  async submitMany(
    specs: readonly JobSpec[],
    options: { profile?: string } = {},
  ): Promise<JobRecord[]> {
    return this.submitAll(specs, options, false);
  }

  private async submitAll(
    specs: readonly JobSpec[],
    options: { profile?: string },
    single: boolean,
  ): Promise<JobRecord[]> {
    const profile = await this.profile(options.profile ?? 'local');
    const backend = await this.resolveBackend(profile.backend, profile);
    const issues: ValidationIssue[] = [];
    specs.forEach((spec, index) => {
      for (const issue of this.specIssues(spec, backend)) {
        issues.push(
          single ? issue : { path: `jobs.${index}.${issue.path}`, message: issue.message },
        );
      }
    });
    assertValid(
      'E_INVALID_JOB_SPEC',
      specs.length === 1 ? 'The job cannot be submitted' : 'The jobs cannot be submitted',
      issues,
    );
    const prepared: Array<{ record: JobRecord; request: SubmitRequestV1 }> = [];
    for (const spec of specs) {
      const { record, settingsText } = this.newRecord(spec, profile, backend);
      await this.store.createJob(record);
      prepared.push({
        record,
        request: this.submitRequest(record, spec.secrets ?? {}, settingsText),
      });
    }
    const context = this.context(profile, backend);
    let outcomes: ReadonlyArray<SubmitResultV1 | { readonly error: unknown }>;
    if (backend.submitMany && prepared.length > 1) {
      try {
        outcomes = await backend.submitMany(
          prepared.map((entry) => entry.request),
          context,
        );
      } catch (error) {
        outcomes = prepared.map(() => ({ error }));
      }
    } else {
      outcomes = [];
      for (const entry of prepared) {
        try {
          (outcomes as Array<SubmitResultV1 | { error: unknown }>).push(
            await backend.submit(entry.request, context),
          );
        } catch (error) {
          (outcomes as Array<SubmitResultV1 | { error: unknown }>).push({ error });
        }
      }
    }
    const records: JobRecord[] = [];
    let firstError: YonderError | null = null;
    for (const [index, { record }] of prepared.entries()) {
      const outcome = outcomes[index] ?? {
        error: new YonderError(
          'E_INTERNAL',
          `The ${backend.id} backend gave no answer for this job.`,
        ),
      };
      if ('error' in outcome) {
        const failure = toYonderError(outcome.error, 'E_SUBMIT_FAILED');
        firstError ??= failure;
        records.push(await this.recordSubmitFailure(record.id, failure, backend));
      } else {
        records.push(
          await this.store.updateJob(record.id, (job) =>
            this.applySubmitResult(job, outcome, 'submit'),
          ),
        );
      }
    }
    if (single && firstError) throw firstError;
    return records;
  }

  /** Everything wrong with a job spec for this backend. */
  private specIssues(spec: JobSpec, backend: BackendV1): ValidationIssue[] {
    const issues = validateJobSpec(spec);
    const supported = new Set(backend.capabilities.resources);
    for (const [key, value] of Object.entries(spec.resources ?? {})) {
      if (value !== undefined && !supported.has(key as never)) {
        issues.push({
          path: `resources.${key}`,
          message: `the ${backend.id} backend cannot honour ${key} (it supports: ${[...supported].join(', ') || 'none'}); remove it or use a scheduler profile`,
        });
      }
    }
    if ((spec.schedulerOptions?.length ?? 0) > 0 && !backend.capabilities.schedulerOptions) {
      issues.push({
        path: 'schedulerOptions',
        message: `the ${backend.id} backend takes no scheduler options`,
      });
    }
    return issues;
  }

  /** A new ledger record for a job, in `submitting`, and its settings text after path mapping. */
  private newRecord(
    spec: JobSpec,
    profile: Profile,
    backend: BackendV1,
  ): { record: JobRecord; settingsText?: string } {
    const id = newJobId();
    const now = this.now().toISOString();
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
      target: backend.targetKey(profile),
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
      },
      profileSnapshot: profile,
      submitter: currentProcessIdentity(),
      data: {},
      revision: 0,
    };
    return settingsText === undefined ? { record } : { record, settingsText };
  }

  /** A submit that failed: failed now, unless the outcome is unknown and can be looked up later. */
  private recordSubmitFailure(
    id: string,
    failure: YonderError,
    backend: BackendV1,
  ): Promise<JobRecord> {
    const unknownOutcome = failure.code === 'E_TIMEOUT' || failure.code === 'E_TRANSPORT';
    return this.store.updateJob(id, (job) => {
      const base: JobRecord = {
        ...job,
        error: failure.toJSON(),
        submitter: null,
        updatedAt: this.now().toISOString(),
      };
      if (unknownOutcome && backend.capabilities.recoverSubmit) return base;
      return transition(
        base,
        'failed',
        {
          source: 'submit',
          reason: unknownOutcome ? 'submit-outcome-unknown' : 'submit-failed',
          failureKind: 'infrastructure',
        },
        this.now(),
      );
    });
  }

  private submitRequest(
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
      profile: job.profileSnapshot,
    };
  }

  private applySubmitResult(job: JobRecord, result: SubmitResultV1, source: string): JobRecord {
    const now = this.now();
    const base: JobRecord = {
      ...job,
      externalId: result.externalId,
      data: result.data as JsonObject,
      submittedAt: now.toISOString(),
      submitter: null,
      error: null,
    };
    return transition(
      base,
      result.state,
      { source, nativeState: result.nativeState ?? result.state },
      now,
    );
  }

  private context(profile: Profile, backend: BackendV1): BackendContextV1 {
    const transportId = this.transportId(profile, backend);
    const key = transportId === 'local' ? 'local' : `${transportId}:${profile.host ?? ''}`;
    let transport = this.transports.get(key);
    if (!transport) {
      transport = this.registry.transport(transportId)(profile);
      this.transports.set(key, transport);
    }
    return { transport, stateDirectory: this.stateDirectory };
  }

  /**
   * Bring active jobs up to date: for each target, one batched poll, shared with any other
   * yonder process refreshing the same target at the same time.
   */
  async refresh(options: RefreshOptions = {}): Promise<{ problems: StoreProblemV1[] }> {
    const { jobs, problems } = await this.store.listJobs({ activeOnly: true });
    const wanted = options.ids ? new Set(options.ids) : null;
    const groups = new Map<string, { backend: BackendV1; jobs: JobRecord[] }>();
    for (const job of jobs) {
      if (wanted && !wanted.has(job.id)) continue;
      let backend: BackendV1;
      try {
        backend = await this.resolveBackend(job.backend, job.profileSnapshot);
      } catch (error) {
        await this.store.updateJob(job.id, (current) => ({
          ...current,
          error: toYonderError(error).toJSON(),
        }));
        continue;
      }
      const key = `${backend.id}|${job.target}`;
      const group = groups.get(key) ?? { backend, jobs: [] };
      group.jobs.push(job);
      groups.set(key, group);
    }
    await Promise.all(
      [...groups.entries()].map(([key, group]) =>
        this.refreshTarget(key, group.backend, group.jobs, options.force ?? false),
      ),
    );
    return { problems };
  }

  private async refreshTarget(
    key: string,
    backend: BackendV1,
    jobs: JobRecord[],
    force: boolean,
  ): Promise<void> {
    const leaseKey = `poll-${sha256(key).slice(0, 24)}`;
    const lease = await this.store.tryLease(leaseKey, this.leaseTtlMs);
    if (!lease) {
      // Another process is polling this target right now: its results are ours too.
      await this.store.waitForLease(leaseKey, this.leaseTtlMs);
      return;
    }
    let completed = false;
    try {
      if (!force && lease.lastCompletedAt) {
        const age = this.now().getTime() - Date.parse(lease.lastCompletedAt);
        if (age >= 0 && age < this.minPollIntervalMs) {
          completed = false;
          return;
        }
      }
      // The listing was made just before the lease was taken; every write below re-applies
      // its change to the record as it is then, so nothing another process wrote is lost.
      const active = jobs.filter((job) => !isTerminal(job.state));
      const context = this.context((active[0] ?? (jobs[0] as JobRecord)).profileSnapshot, backend);
      const submitting = active.filter((job) => job.state === 'submitting');
      const recovered = await this.recoverSubmits(backend, submitting, context);
      const pollable = active
        .map((job) => recovered.get(job.id) ?? job)
        .filter((job) => !isTerminal(job.state) && job.externalId !== null);
      await this.repeatCancels(
        backend,
        pollable.filter((job) => job.cancel !== null),
        context,
      );
      const polled = await this.pollJobs(backend, pollable, context);
      await this.enforcePendingTimeouts(backend, polled, context);
      completed = true;
    } finally {
      await lease.release({ completed });
    }
  }

  private async recoverSubmits(
    backend: BackendV1,
    jobs: JobRecord[],
    context: BackendContextV1,
  ): Promise<Map<string, JobRecord>> {
    const updated = new Map<string, JobRecord>();
    // A submit whose process is still alive is in progress; leave it alone.
    const orphans = jobs.filter((job) => job.submitter === null || !isProcessAlive(job.submitter));
    if (orphans.length === 0) return updated;
    const interrupted = (current: JobRecord): JobRecord =>
      transition(
        { ...current, submitter: null },
        'failed',
        { source: 'recover', reason: 'submit-interrupted', failureKind: 'infrastructure' },
        this.now(),
      );
    if (!backend.capabilities.recoverSubmit || !backend.recover) {
      for (const job of orphans)
        updated.set(job.id, await this.store.updateJob(job.id, interrupted));
      return updated;
    }
    let found: ReadonlyMap<string, SubmitResultV1 | null>;
    try {
      found = await backend.recover(
        orphans.map((job) => this.submitRequest(job, {})),
        context,
      );
    } catch (error) {
      const failure = toYonderError(error, 'E_TRANSPORT').toJSON();
      for (const job of orphans) {
        updated.set(
          job.id,
          await this.store.updateJob(job.id, (current) => ({ ...current, error: failure })),
        );
      }
      return updated;
    }
    for (const job of orphans) {
      if (!found.has(job.id)) continue;
      const result = found.get(job.id);
      const record = await this.store.updateJob(job.id, (current) => {
        if (current.state !== 'submitting') return undefined;
        return result ? this.applySubmitResult(current, result, 'recover') : interrupted(current);
      });
      updated.set(job.id, record);
    }
    return updated;
  }

  private async repeatCancels(
    backend: BackendV1,
    jobs: JobRecord[],
    context: BackendContextV1,
  ): Promise<void> {
    if (jobs.length === 0) return;
    const now = this.now().getTime();
    const force = (job: JobRecord): boolean => {
      const grace = (job.profileSnapshot.cancelGraceSeconds ?? 10) * 1000;
      return job.cancel !== null && now - Date.parse(job.cancel.requestedAt) >= grace;
    };
    await this.sendCancel(
      backend,
      jobs.filter((job) => !force(job)),
      context,
      false,
    );
    await this.sendCancel(backend, jobs.filter(force), context, true);
  }

  private async sendCancel(
    backend: BackendV1,
    jobs: JobRecord[],
    context: BackendContextV1,
    force: boolean,
  ): Promise<void> {
    if (jobs.length === 0) return;
    let outcomes: ReadonlyMap<string, { kind: string; error?: { code: string; message: string } }>;
    try {
      outcomes = await backend.cancel(jobs.map(backendJob), context, { force });
    } catch (error) {
      const failure = toYonderError(error, 'E_CANCEL_FAILED').toJSON();
      outcomes = new Map(jobs.map((job) => [job.id, { kind: 'failed', error: failure }]));
    }
    const at = this.now().toISOString();
    for (const job of jobs) {
      const outcome = outcomes.get(job.id);
      await this.store.updateJob(job.id, (current) => {
        if (!current.cancel) return undefined;
        if (outcome?.kind === 'failed' && outcome.error)
          return { ...current, error: outcome.error };
        return { ...current, cancel: { ...current.cancel, lastSentAt: at } };
      });
    }
  }

  private async pollJobs(
    backend: BackendV1,
    jobs: JobRecord[],
    context: BackendContextV1,
  ): Promise<JobRecord[]> {
    if (jobs.length === 0) return [];
    let observations: ReadonlyMap<string, ObservationV1>;
    try {
      observations = await backend.poll(jobs.map(backendJob), context);
    } catch (error) {
      const failure = toYonderError(error, 'E_SCHEDULER_UNAVAILABLE');
      observations = new Map(
        jobs.map(
          (job) =>
            [
              job.id,
              { kind: 'query-failed', source: backend.id, error: failure.toJSON() },
            ] as const,
        ),
      );
    }
    const policy: StatePolicy = {
      ...this.policy,
      absentGraceMs: Math.max(
        this.policy.absentGraceMs ?? 0,
        (backend.capabilities.absentGraceSeconds ?? 0) * 1000,
      ),
    };
    const now = this.now();
    const records = await Promise.all(
      jobs.map(async (job) => {
        const observation: ObservationV1 = observations.get(job.id) ?? {
          kind: 'query-failed',
          source: backend.id,
          error: {
            code: 'E_INTERNAL',
            message: `The ${backend.id} backend returned nothing for this job.`,
          },
        };
        // Most polls change nothing: write only when the rules say something changed.
        if (unchanged(job, applyObservation(job, observation, now, policy))) return job;
        return this.store.updateJob(job.id, (current) => {
          const next = applyObservation(current, observation, now, policy);
          return unchanged(current, next) ? undefined : next;
        });
      }),
    );
    return records;
  }

  private async enforcePendingTimeouts(
    backend: BackendV1,
    jobs: readonly JobRecord[],
    context: BackendContextV1,
  ): Promise<void> {
    const now = this.now();
    const expired: JobRecord[] = [];
    for (const job of jobs) {
      const limit = job.profileSnapshot.pendingTimeoutSeconds;
      if (job.state !== 'pending' || job.cancel || !limit || !job.pendingSince) continue;
      if (now.getTime() - Date.parse(job.pendingSince) < limit * 1000) continue;
      expired.push(
        await this.store.updateJob(job.id, (current) =>
          current.cancel || current.state !== 'pending'
            ? undefined
            : {
                ...current,
                cancel: {
                  requestedAt: now.toISOString(),
                  reason: 'pending-timeout',
                  lastSentAt: null,
                },
              },
        ),
      );
    }
    await this.sendCancel(backend, expired, context, false);
  }

  /**
   * Ask for jobs to stop. The request is remembered and repeated by every refresh until the
   * job is terminal; after the profile's grace period the forceful form is used.
   * With `waitMs`, keeps refreshing until the jobs are terminal or the time is up.
   */
  async cancel(
    references: readonly string[],
    options: { waitMs?: number } = {},
  ): Promise<JobRecord[]> {
    const jobs = await Promise.all(references.map((ref) => this.resolve(ref)));
    const requested: JobRecord[] = [];
    for (const job of jobs) {
      if (isTerminal(job.state)) continue;
      requested.push(
        await this.store.updateJob(job.id, (current) =>
          isTerminal(current.state) || current.cancel?.reason === 'user'
            ? undefined
            : {
                ...current,
                cancel: { requestedAt: this.now().toISOString(), reason: 'user', lastSentAt: null },
              },
        ),
      );
    }
    const byTarget = new Map<string, JobRecord[]>();
    for (const job of requested) {
      if (job.externalId === null || isTerminal(job.state)) continue;
      const key = `${job.backend}|${job.target}`;
      byTarget.set(key, [...(byTarget.get(key) ?? []), job]);
    }
    for (const group of byTarget.values()) {
      const first = group[0] as JobRecord;
      const backend = await this.resolveBackend(first.backend, first.profileSnapshot);
      await this.sendCancel(backend, group, this.context(first.profileSnapshot, backend), false);
    }
    const ids = jobs.map((job) => job.id);
    const deadline = Date.now() + (options.waitMs ?? 0);
    let delay = 100;
    for (;;) {
      await this.refresh({ ids, force: true });
      const current = await Promise.all(ids.map((id) => this.store.getJob(id)));
      const done = current.every((job) => !job || isTerminal(job.state));
      if (done || Date.now() >= deadline)
        return current.filter((job): job is JobRecord => job !== undefined);
      await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
      delay = Math.min(delay * 2, 1000);
    }
  }

  /** Active jobs plus recent ones (or all), newest first, after a refresh unless told not to. */
  async list(
    options: ListOptions = {},
  ): Promise<{ jobs: JobRecord[]; problems: StoreProblemV1[] }> {
    const problems: StoreProblemV1[] = [];
    if (options.refresh ?? true) problems.push(...(await this.refresh()).problems);
    let jobs: JobRecord[];
    if (options.all) {
      const result = await this.store.listJobs({});
      jobs = result.jobs;
      problems.push(...result.problems);
    } else {
      const [active, recent] = await Promise.all([
        this.store.listJobs({ activeOnly: true }),
        this.store.listJobs({ limit: options.recent ?? 20 }),
      ]);
      const seen = new Map<string, JobRecord>();
      for (const job of [...active.jobs, ...recent.jobs]) seen.set(job.id, job);
      jobs = [...seen.values()].sort((a, b) =>
        a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0,
      );
      for (const problem of [...active.problems, ...recent.problems]) {
        if (!problems.some((p) => p.location === problem.location)) problems.push(problem);
      }
    }
    if (options.states) jobs = jobs.filter((job) => options.states?.includes(job.state));
    if (options.profile) {
      const wanted = options.profile.toLowerCase();
      jobs = jobs.filter((job) => job.profile.toLowerCase() === wanted);
    }
    return { jobs, problems };
  }

  /** The jobs, refreshed first unless told not to. */
  async status(
    references: readonly string[],
    options: { refresh?: boolean } = {},
  ): Promise<JobRecord[]> {
    const jobs = await Promise.all(references.map((ref) => this.resolve(ref)));
    if (options.refresh ?? true) {
      await this.refresh({
        ids: jobs.filter((job) => !isTerminal(job.state)).map((job) => job.id),
      });
      return Promise.all(jobs.map(async (job) => (await this.store.getJob(job.id)) ?? job));
    }
    return jobs;
  }

  /**
   * Wait until every job is terminal. Resolves with the jobs; `timedOut` is true when the time
   * ran out first.
   */
  async wait(
    references: readonly string[],
    options: WaitOptions = {},
  ): Promise<{ jobs: JobRecord[]; timedOut: boolean }> {
    let jobs = await Promise.all(references.map((ref) => this.resolve(ref)));
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    const seen = new Map(jobs.map((job) => [job.id, job.state]));
    let delay = 200;
    for (;;) {
      const active = jobs.filter((job) => !isTerminal(job.state));
      if (active.length > 0) {
        await this.refresh({ ids: active.map((job) => job.id) });
        jobs = await Promise.all(jobs.map(async (job) => (await this.store.getJob(job.id)) ?? job));
      }
      for (const job of jobs) {
        if (seen.get(job.id) !== job.state) {
          seen.set(job.id, job.state);
          options.onChange?.(job);
        }
      }
      if (jobs.every((job) => isTerminal(job.state))) return { jobs, timedOut: false };
      if (Date.now() >= deadline || options.signal?.aborted) return { jobs, timedOut: true };
      const ceiling = Math.max(
        1000,
        ...jobs
          .filter((job) => !isTerminal(job.state))
          .map((job) => (job.profileSnapshot.pollSeconds ?? 2) * 1000),
      );
      await sleep(Math.max(0, Math.min(delay, deadline - Date.now())));
      delay = Math.min(delay * 1.5, ceiling);
    }
  }

  /** The last `lines` lines of a job's output. */
  async logs(
    reference: string,
    options: { lines?: number } = {},
  ): Promise<{ job: JobRecord; chunk: LogChunkV1 }> {
    const job = await this.resolve(reference);
    return { job, chunk: await this.readLog(job, { tailLines: options.lines ?? 200 }) };
  }

  private async readLog(
    job: JobRecord,
    options: { tailLines?: number; offset?: number },
  ): Promise<LogChunkV1> {
    const backend = await this.resolveBackend(job.backend, job.profileSnapshot);
    if (!backend.capabilities.logs) {
      throw new YonderError(
        'E_LOG_UNAVAILABLE',
        `The ${backend.id} backend cannot read job output.`,
      );
    }
    if (job.externalId === null) {
      return { exists: false, text: '', offset: 0, message: 'The job has not been submitted yet.' };
    }
    return backend.readLog(backendJob(job), options, this.context(job.profileSnapshot, backend));
  }

  /**
   * Stream a job's output to `write` until the job is terminal and everything it wrote
   * has been read. `onNotice` gets messages for people (e.g. the log does not exist yet).
   */
  async follow(
    reference: string,
    write: (text: string) => void,
    options: { lines?: number; onNotice?: (text: string) => void; signal?: AbortSignal } = {},
  ): Promise<JobRecord> {
    let job = await this.resolve(reference);
    let chunk = await this.readLog(job, { tailLines: options.lines ?? 10 });
    let offset = chunk.offset;
    let noticed = false;
    if (chunk.text) write(chunk.text);
    else if (!chunk.exists && chunk.message) {
      options.onNotice?.(chunk.message);
      noticed = true;
    }
    let delay = 200;
    for (;;) {
      if (options.signal?.aborted) return job;
      const wasTerminal = isTerminal(job.state);
      if (!wasTerminal) {
        await this.refresh({ ids: [job.id] });
        job = (await this.store.getJob(job.id)) ?? job;
      }
      chunk = await this.readLog(job, { offset });
      if (chunk.text) {
        write(chunk.text);
        offset = chunk.offset;
        delay = 200;
        continue;
      }
      if (!chunk.exists && chunk.message && !noticed) {
        options.onNotice?.(chunk.message);
        noticed = true;
      }
      if (wasTerminal || isTerminal(job.state)) {
        if (wasTerminal) return job;
        continue;
      }
      await sleep(delay);
      delay = Math.min(delay * 1.5, (job.profileSnapshot.pollSeconds ?? 2) * 1000);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.transports.values()].map((transport) => transport.close()));
    this.transports.clear();
    await this.store.close();
  }
}
