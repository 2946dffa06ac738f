/** Forgetting jobs (`rm`, `prune`): an active one only when forced (cancelled first), each job's directory removed on its target through its backend (one command per target), then its record. */
import { getErrorMessage } from '../errors/get-error-message.js';
import { toYonderError, YonderError } from '../errors/yonder-error.js';
import type { CleanupOutcomeV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord, JobState } from '../spec/job.js';
import type { StoreProblemV1 } from '../spec/store/v1/store-v1.js';
import { isTerminal } from '../state/job-states.js';
import { requestCancel } from './cancel-jobs.js';
import { settleWaitingJobs } from './dependencies.js';
import { jobRoute } from './job-route.js';
import { backendJob, type ManagerContext } from './manager-context.js';
import { releaseHeldJobs } from './submit-jobs.js';
import { waitForCancelled } from './wait-for-jobs.js';

/** What became of one job asked to be forgotten. */
export interface ForgetResult {
  readonly id: string;
  /** The job's state when it was forgotten (or left). */
  readonly state: JobState;
  /** Whether its record is gone from the ledger. */
  readonly removed: boolean;
  /**
   * What became of its files on the target: `removed`, `absent`, `kept` (not the job's own to
   * remove, with the reason), `failed` (the target could not be reached), `unsupported` (the
   * backend cannot remove them), or `dry-run`.
   */
  readonly files: CleanupOutcomeV1['kind'] | 'unsupported' | 'dry-run';
  /** Why the files were kept or not removed, or why the job was left. */
  readonly message?: string;
}

export interface ForgetOptions {
  /** Cancel a job that is not terminal, then forget it whatever the cancel achieved. */
  force?: boolean;
  /** Say what would be forgotten, change nothing. */
  dryRun?: boolean;
  /** How long a forced job may take to end after its cancel before it is forgotten anyway. Default 10 s. */
  cancelWaitMs?: number;
  /**
   * Keep the record of a job whose files could not be removed (its target could not be
   * reached), so that a later try removes them: what retention does. By default the record goes.
   */
  keepUncleaned?: boolean;
  /**
   * How long the targets may take to remove the files, all together (they are asked at the
   * same time); a target that has not answered by then is `failed` (`E_TIMEOUT`). Default: as
   * long as each backend's cleanup takes.
   */
  cleanupDeadlineMs?: number;
}

/**
 * Forget jobs: a terminal one at once; one that is not only with `force` (cancelled, waited
 * for a while, then forgotten even if its target never answered). Each job's directory is
 * removed through its backend's `cleanup`, one call per target; a target that cannot be
 * reached leaves the files (said so), not the record.
 * @throws YonderError `E_JOB_ACTIVE` (before anything is changed) when a job is not terminal
 *   and `force` is not given; `E_UNSUPPORTED` when the store cannot forget jobs.
 */
export async function forgetJobs(
  context: ManagerContext,
  jobs: readonly JobRecord[],
  options: ForgetOptions = {},
): Promise<ForgetResult[]> {
  const store = context.store;
  if (!store.removeJob)
    throw new YonderError('E_UNSUPPORTED', `The ${store.id} store cannot forget jobs.`);
  const active = jobs.filter((job) => !isTerminal(job.state));
  if (active.length > 0 && !options.force) {
    throw new YonderError(
      'E_JOB_ACTIVE',
      `${active.map((job) => `${job.id} is ${job.state}`).join('; ')}: cancel ${active.length > 1 ? 'them' : 'it'} first, or add --force to cancel and forget ${active.length > 1 ? 'them' : 'it'}.`,
      { data: { jobs: active.map((job) => job.id) } },
    );
  }
  if (options.dryRun)
    return jobs.map((job) => ({ id: job.id, state: job.state, removed: false, files: 'dry-run' }));
  // Dependents judged on these jobs as they are, before their records go: one whose parent
  // succeeded is released, not failed for a parent it can no longer find.
  await settleWaitingJobs(context, (held) => releaseHeldJobs(context, held));
  let current = [...jobs];
  // Why a forced job was forgotten before it ended (its target never answered the cancel).
  let cancelFailure: string | undefined;
  if (active.length > 0) {
    // A target that cannot be reached must not keep the job: the cancel is tried, not awaited
    // forever, and what went wrong is said in the job's result.
    try {
      await requestCancel(context, active);
      const ended = await waitForCancelled(
        context,
        active.map((job) => job.id),
        options.cancelWaitMs ?? 10_000,
      );
      const byId = new Map(ended.map((job) => [job.id, job]));
      current = current.map((job) => byId.get(job.id) ?? job);
    } catch (error) {
      cancelFailure = `the cancel failed: ${getErrorMessage(error)}`;
    }
  }
  // Files of a job that has not ended are its own still: only ended jobs are cleaned up.
  const files = await cleanupFiles(
    context,
    current.filter((job) => isTerminal(job.state)),
    options.cleanupDeadlineMs,
  );
  for (const job of current)
    if (!isTerminal(job.state))
      files.set(job.id, { kind: 'kept', reason: 'the job had not ended, so its files are left' });
  const results: ForgetResult[] = [];
  for (const job of current) {
    const outcome = files.get(job.id) ?? { kind: 'unsupported' as const };
    const removed =
      options.keepUncleaned && outcome.kind === 'failed' ? false : await store.removeJob(job.id);
    const unended = isTerminal(job.state)
      ? undefined
      : `forgotten while ${job.state}: ${cancelFailure ?? job.error?.message ?? 'it had not ended after the cancel'}`;
    const message =
      unended ??
      (outcome.kind === 'kept'
        ? outcome.reason
        : outcome.kind === 'failed'
          ? outcome.error.message
          : outcome.kind === 'unsupported'
            ? `the ${job.backend} backend does not remove job files`
            : undefined);
    results.push({
      id: job.id,
      state: job.state,
      removed,
      files: outcome.kind,
      ...(message === undefined ? {} : { message }),
    });
  }
  // A dependent still waiting for a job that is gone can never start: settled now.
  if (results.some((result) => result.removed))
    await settleWaitingJobs(context, (held) => releaseHeldJobs(context, held));
  return results;
}

type FileOutcome = CleanupOutcomeV1 | { readonly kind: 'unsupported' };

/**
 * Each job's files removed through its backend, one call per target, the targets at the same
 * time; by `deadlineMs`, if given, those that have not answered are `failed`.
 */
async function cleanupFiles(
  context: ManagerContext,
  jobs: readonly JobRecord[],
  deadlineMs?: number,
): Promise<Map<string, FileOutcome>> {
  const groups = new Map<string, JobRecord[]>();
  for (const job of jobs) {
    const key = jobRoute(job);
    groups.set(key, [...(groups.get(key) ?? []), job]);
  }
  let timer: NodeJS.Timeout | undefined;
  const deadline =
    deadlineMs === undefined
      ? undefined
      : new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), deadlineMs);
          timer.unref?.();
        });
  try {
    const answers = await Promise.all(
      [...groups.values()].map(async (group) => {
        const answer = cleanupGroup(context, group);
        const first = deadline ? await Promise.race([answer, deadline]) : await answer;
        if (first !== 'late') return first;
        const { target } = group[0] as JobRecord;
        const late: FileOutcome = {
          kind: 'failed',
          error: new YonderError(
            'E_TIMEOUT',
            `${target} did not answer within ${Math.round((deadlineMs ?? 0) / 1000)} s`,
          ).toJSON(),
        };
        return new Map(group.map((job) => [job.id, late] as const));
      }),
    );
    return new Map(answers.flatMap((answer) => [...answer]));
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** The files of one target's jobs removed through its backend, in one call. */
async function cleanupGroup(
  context: ManagerContext,
  group: readonly JobRecord[],
): Promise<Map<string, FileOutcome>> {
  const out = new Map<string, FileOutcome>();
  const first = group[0] as JobRecord;
  try {
    const backend = await context.resolveBackend(first.backend, first.profileSnapshot);
    if (!backend.cleanup) {
      for (const job of group) out.set(job.id, { kind: 'unsupported' });
      return out;
    }
    const answers = await backend.cleanup(
      group.map((job) => backendJob(job, backend)),
      await context.backendContext(first.profileSnapshot, backend),
    );
    for (const job of group) {
      out.set(
        job.id,
        answers.get(job.id) ?? {
          kind: 'failed',
          error: { code: 'E_INTERNAL', message: `The ${backend.id} backend gave no answer.` },
        },
      );
    }
  } catch (error) {
    const failure = toYonderError(error, 'E_TRANSPORT').toJSON();
    for (const job of group) out.set(job.id, { kind: 'failed', error: failure });
  }
  return out;
}

/** Which jobs `prune` forgets. */
export interface PruneOptions extends Omit<ForgetOptions, 'force'> {
  /** Jobs that ended (or, never started, were created) at least this long ago. */
  olderThanMs: number;
  /** Only jobs in these (terminal) states; default every terminal state. */
  states?: readonly JobState[];
}

/**
 * Forget every terminal job that ended longer ago than `olderThanMs` (in `states`, when given):
 * its record and its files on the target. Active jobs are never pruned. Records that cannot be
 * read are reported, never removed.
 */
export async function pruneJobs(
  context: ManagerContext,
  options: PruneOptions,
): Promise<{ results: ForgetResult[]; problems: StoreProblemV1[] }> {
  const { jobs, problems } = await context.store.listJobs({});
  const cutoff = context.now().getTime() - options.olderThanMs;
  const old = jobs.filter((job) => {
    if (!isTerminal(job.state)) return false;
    if (options.states && !options.states.includes(job.state)) return false;
    const ended = Date.parse(job.finishedAt ?? job.updatedAt ?? job.createdAt);
    return Number.isFinite(ended) && ended <= cutoff;
  });
  const results = await forgetJobs(context, old, {
    ...(options.dryRun === undefined ? {} : { dryRun: options.dryRun }),
  });
  return { results, problems };
}
