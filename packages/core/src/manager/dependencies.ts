/** Dependencies kept by yonder: a dependent waits in the ledger until every parent's condition holds, then whichever yonder process refreshes submits it; one whose condition can no longer hold is settled `failed` at once. */
import { createHash } from 'node:crypto';
import type { ValidationIssue } from '../errors/validation-error.js';
import { YonderError } from '../errors/yonder-error.js';
import { parseJson } from '../json/parse-json.js';
import { mapSettingsPaths } from '../paths/map-paths.js';
import { currentProcessIdentity } from '../process/process-identity.js';
import type {
  DependencyCondition,
  FailureKind,
  JobDependency,
  JobRecord,
  JobSpec,
} from '../spec/job.js';
import { transition } from '../state/apply-observation.js';
import { isTerminal } from '../state/job-states.js';
import { type DependencyReference, parseDependency } from '../validation/parse-dependency.js';
import type { ManagerContext } from './manager-context.js';
import { resolveJob } from './resolve-job.js';

/** The native state of a job yonder holds back until its parents' conditions hold. */
export const WAITING = 'waiting';

/** The reason of a dependent whose condition can no longer hold. */
export const NEVER_SATISFIED = 'dependency-never-satisfied';

/** Whether yonder is holding the job back for its parents (it has not been submitted yet). */
export function isWaiting(
  job: Pick<JobRecord, 'state' | 'nativeState' | 'submittedAt' | 'after'>,
): boolean {
  return (
    job.state === 'pending' &&
    job.nativeState === WAITING &&
    job.submittedAt === null &&
    (job.after?.length ?? 0) > 0
  );
}

/** What a parent's record says about one condition: met, never to be met (and why), or not yet. */
export type Verdict =
  | { readonly kind: 'met' }
  | { readonly kind: 'never'; readonly why: string; readonly failureKind: FailureKind }
  | { readonly kind: 'wait' };

/** Whether the job ever started running (a job that ended of its own exit did). */
function hasStarted(job: JobRecord): boolean {
  return (
    job.state === 'running' ||
    job.state === 'succeeded' ||
    Boolean(job.startedAt) ||
    job.exitCode !== null ||
    job.history.some((step) => step.to === 'running')
  );
}

/** How a parent ended, in words: `failed (exit 1)`, `was cancelled`… */
function endedText(job: JobRecord): string {
  if (job.state === 'cancelled') return 'was cancelled';
  if (job.state === 'succeeded') return 'succeeded';
  const detail = job.exitCode !== null ? `exit ${job.exitCode}` : (job.signal ?? job.reason);
  return `failed${detail ? ` (${detail})` : ''}`;
}

/** One condition judged on its parent's record as it is now (`null`: gone from the ledger). */
export function judge(when: DependencyCondition, parent: JobRecord | null, id: string): Verdict {
  if (parent === null)
    return {
      kind: 'never',
      why: `${id} is no longer in the ledger`,
      failureKind: 'application',
    };
  const never = (why: string): Verdict => ({
    kind: 'never',
    why: `${id} ${why}`,
    failureKind: parent.failureKind ?? 'application',
  });
  switch (when) {
    case 'ok':
      if (parent.state === 'succeeded') return { kind: 'met' };
      if (isTerminal(parent.state)) return never(endedText(parent));
      // A cancel the user asked for: the pipeline is being stopped, whatever the parent's end.
      if (parent.cancel?.reason === 'user') return never('was cancelled');
      return { kind: 'wait' };
    case 'notok':
      if (parent.state === 'failed' || parent.state === 'cancelled') return { kind: 'met' };
      if (parent.state === 'succeeded') return never('succeeded');
      return { kind: 'wait' };
    case 'any':
      return isTerminal(parent.state) ? { kind: 'met' } : { kind: 'wait' };
    case 'started':
      if (hasStarted(parent)) return { kind: 'met' };
      if (isTerminal(parent.state)) return never(`${endedText(parent)} without starting`);
      return { kind: 'wait' };
  }
}

const CONDITION_WORDS: Record<DependencyCondition, string> = {
  ok: 'succeeded',
  notok: 'failed or was cancelled',
  any: 'ended',
  started: 'started',
};

/** `3f9a1c2b7d4e:ok`, as `--after` takes it back. */
export function dependencyText(dependency: JobDependency): string {
  return `${dependency.job}:${dependency.when}`;
}

/**
 * The parents of each spec of one submit, looked up: `#N` is the job numbered N in `numbers`
 * (default: its position, from 1), anything else a job id or prefix in the ledger. Every
 * problem is an issue at `after.N` of its spec (cycles at `after`), nothing is written: an
 * unknown or ambiguous job, `#N` outside a batch, naming the job itself, or out of range, a
 * cycle, and a parent whose condition can already never hold.
 */
export async function resolveDependencies(
  context: ManagerContext,
  specs: readonly JobSpec[],
  ids: readonly string[],
  numbers: readonly number[] | undefined,
  single: boolean,
): Promise<{ after: Array<JobDependency[] | undefined>; issues: ValidationIssue[][] }> {
  const numberOf = (index: number) => numbers?.[index] ?? index + 1;
  const indexOf = new Map(specs.map((_, index) => [numberOf(index), index]));
  const issues: ValidationIssue[][] = specs.map(() => []);
  const after: Array<JobDependency[] | undefined> = specs.map(() => undefined);
  const edges: number[][] = specs.map(() => []);
  for (const [index, spec] of specs.entries()) {
    if (!spec.after || spec.after.length === 0) continue;
    const found: JobDependency[] = [];
    for (const [position, text] of spec.after.entries()) {
      const path = `after.${position}`;
      const parsed = parseDependency(text);
      if (!parsed.ok) continue; // said by the spec's own check (validateJobSpec)
      const reference: DependencyReference = parsed.value;
      if (reference.kind === 'batch') {
        const parent = indexOf.get(reference.number);
        const message =
          single && specs.length === 1
            ? `"#${reference.number}" names a job of the same batch; only a batch line may use #N (give a job id here)`
            : parent === undefined
              ? `"#${reference.number}" is no job of this batch (its jobs are ${[...indexOf.keys()].map((n) => `#${n}`).join(', ')})`
              : parent === index
                ? `"#${reference.number}" is this job itself; a job cannot wait for itself`
                : null;
        if (message !== null || parent === undefined) {
          issues[index]?.push({ path, message: message ?? 'names no job' });
          continue;
        }
        edges[index]?.push(parent);
        found.push({ job: ids[parent] as string, when: reference.when });
        continue;
      }
      let parent: JobRecord;
      try {
        parent = await resolveJob(context.store, reference.prefix);
      } catch (error) {
        if (!YonderError.isInstance(error)) throw error;
        issues[index]?.push({
          path,
          message:
            error.code === 'E_NO_SUCH_JOB'
              ? `${error.message} Give the id, or a prefix, of a job in the ledger (of any profile).`
              : error.message,
        });
        continue;
      }
      const verdict = judge(reference.when, parent, parent.id);
      if (verdict.kind === 'never') {
        issues[index]?.push({
          path,
          message: `${verdict.why}, so "${parent.id}:${reference.when}" (run once it ${CONDITION_WORDS[reference.when]}) can never hold; wait for a new run of it, or choose another condition (${parent.id}:any runs after it whatever its end)`,
        });
        continue;
      }
      found.push({ job: parent.id, when: reference.when });
    }
    after[index] = found;
  }
  for (const cycle of findCycles(edges)) {
    const first = cycle[0] as number;
    issues[first]?.push({
      path: 'after',
      message: `${[...cycle, first].map((n) => `#${numberOf(n)}`).join(' → ')} is a cycle: each would wait for itself; remove one of these "after" entries`,
    });
  }
  return { after, issues };
}

/** Each cycle of a graph given as edges from a node to the nodes it waits for, once. */
function findCycles(edges: readonly (readonly number[])[]): number[][] {
  const state = edges.map(() => 0); // 0 new, 1 on the path, 2 done
  const cycles: number[][] = [];
  const path: number[] = [];
  // Iterative depth-first search: a batch of many lines must not overflow the stack.
  for (let start = 0; start < edges.length; start += 1) {
    if (state[start] !== 0) continue;
    const stack: Array<{ node: number; next: number }> = [{ node: start, next: 0 }];
    state[start] = 1;
    path.push(start);
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { node: number; next: number };
      const targets = edges[top.node] ?? [];
      if (top.next >= targets.length) {
        state[top.node] = 2;
        path.pop();
        stack.pop();
        continue;
      }
      const target = targets[top.next] as number;
      top.next += 1;
      if (state[target] === 1) cycles.push(path.slice(path.indexOf(target)));
      else if (state[target] === 0) {
        state[target] = 1;
        path.push(target);
        stack.push({ node: target, next: 0 });
      }
    }
  }
  return cycles;
}

/** A dependent's record, held back: `pending` with native state `waiting`, not submitted. */
export function holdJob(job: JobRecord, after: JobDependency[], now: Date): JobRecord {
  return transition(
    { ...job, after, submitter: null },
    'pending',
    { source: 'dependencies', nativeState: WAITING, reason: 'waiting-for-dependencies' },
    now,
  );
}

/** A dependent that waited, settled `failed` because a parent's condition can no longer hold. */
function neverSatisfied(
  job: JobRecord,
  dependency: JobDependency,
  verdict: Extract<Verdict, { kind: 'never' }>,
  now: Date,
): JobRecord {
  return transition(
    {
      ...job,
      error: {
        code: 'E_DEPENDENCY_NEVER_SATISFIED',
        message: `It was to run once ${dependency.job} ${CONDITION_WORDS[dependency.when]} (${dependencyText(dependency)}), but ${verdict.why}.`,
      },
    },
    'failed',
    {
      source: 'dependencies',
      nativeState: null,
      reason: NEVER_SATISFIED,
      failureKind: verdict.failureKind,
    },
    now,
  );
}

/** Cancel a job yonder still holds back: nothing was sent anywhere, so it is cancelled at once. */
export function cancelWaiting(job: JobRecord, now: Date): JobRecord {
  return transition(
    {
      ...job,
      cancel: {
        requestedAt: now.toISOString(),
        reason: 'user',
        lastSentAt: null,
        reachedAt: null,
      },
    },
    'cancelled',
    { source: 'cancel', nativeState: null, reason: 'cancelled-while-waiting' },
    now,
  );
}

/** Submits jobs that were held back (already claimed: `submitting`, this process's). */
export type ReleaseJobs = (jobs: readonly JobRecord[]) => Promise<void>;

/**
 * Judge every waiting job of the ledger on its parents' records as they are now: settle as
 * `failed` (`dependency-never-satisfied`) each one whose condition can no longer hold, and
 * release (claim, then submit through `release`) each whose conditions all hold. A claim is
 * made under the job's lock, so of several processes doing this at once one submits it.
 * Settling cascades: a settled job's own dependents are judged again in the same call.
 */
export async function settleWaitingJobs(
  context: ManagerContext,
  release: ReleaseJobs,
  active?: readonly JobRecord[],
): Promise<void> {
  let jobs = active;
  for (let round = 0; round < 100; round += 1) {
    jobs ??= (await context.store.listJobs({ activeOnly: true })).jobs;
    const waiting = jobs.filter(isWaiting);
    if (waiting.length === 0) return;
    const known = new Map<string, JobRecord | null | 'unreadable'>(
      jobs.map((job) => [job.id, job]),
    );
    const parentOf = async (id: string): Promise<JobRecord | null | 'unreadable'> => {
      let parent = known.get(id);
      if (parent === undefined) {
        // Unreadable just now (a record being replaced, a damaged one): judged again later.
        parent = await context.store.getJob(id).then(
          (record) => record ?? null,
          () => 'unreadable' as const,
        );
        known.set(id, parent);
      }
      return parent;
    };
    let settled = false;
    const claimed: JobRecord[] = [];
    for (const job of waiting) {
      let never: {
        dependency: JobDependency;
        verdict: Extract<Verdict, { kind: 'never' }>;
      } | null = null;
      let allMet = true;
      for (const dependency of job.after ?? []) {
        const parent = await parentOf(dependency.job);
        const verdict: Verdict =
          parent === 'unreadable'
            ? { kind: 'wait' }
            : judge(dependency.when, parent, dependency.job);
        if (verdict.kind === 'never') {
          never = { dependency, verdict };
          break;
        }
        if (verdict.kind !== 'met') allMet = false;
      }
      if (never) {
        const found = never;
        let changed = false;
        await context.store.updateJob(job.id, (current) => {
          changed = false;
          if (!isWaiting(current)) return undefined;
          changed = true;
          return neverSatisfied(current, found.dependency, found.verdict, context.now());
        });
        settled ||= changed;
      } else if (allMet) {
        let mine = false;
        const record = await context.store.updateJob(job.id, (current) => {
          mine = false;
          if (!isWaiting(current)) return undefined;
          mine = true;
          // Why it moved stays in its history; the job itself has no reason to show now.
          return {
            ...transition(
              { ...current, submitter: currentProcessIdentity() },
              'submitting',
              { source: 'dependencies', nativeState: null, reason: 'dependencies-met' },
              context.now(),
            ),
            reason: null,
          };
        });
        if (mine) claimed.push(record);
      }
    }
    if (claimed.length > 0) await release(claimed);
    if (!settled) return;
    jobs = undefined;
  }
}

/**
 * The settings text a held job is submitted with: the settings kept beside its record, paths
 * mapped as at its submit; checked against the digest its record keeps.
 * @throws YonderError `E_SETTINGS_MISSING` when the ledger no longer has them as they were.
 */
export async function heldSettingsText(
  context: ManagerContext,
  job: JobRecord,
): Promise<string | undefined> {
  if (job.spec.settingsSha256 === null) return undefined;
  const text = await context.store.getJobSettings?.(job.id);
  const parsed = text === undefined ? undefined : parseJson(text);
  if (parsed?.ok) {
    const profile = job.profileSnapshot;
    const mapped = `${JSON.stringify(
      mapSettingsPaths(parsed.value as never, profile.localRoot ?? '', profile.remoteRoot ?? ''),
      null,
      2,
    )}\n`;
    if (createHash('sha256').update(mapped).digest('hex') === job.spec.settingsSha256)
      return mapped;
  }
  throw new YonderError(
    'E_SETTINGS_MISSING',
    `Job ${job.id} waited with settings that the ledger no longer has as they were; it was not submitted.`,
  );
}
