/** watchJobs: an async iterator of the ledger's job changes, made here or by any other yonder process, refreshing active targets through the manager at their profiles' poll intervals. */
import { toYonderError } from '../errors/yonder-error.js';
import type { JobRecord, JobState } from '../spec/job.js';
import { isTerminal } from '../state/job-states.js';
import type { JobManager } from './job-manager.js';
import { jobRoute } from './job-route.js';

/** A field of a job's record, as an event's `changed` names it. */
export type JobField = Exclude<keyof JobRecord, 'revision' | 'updatedAt'>;

/** One change to the ledger, as `watchJobs` reports it. */
export type JobEvent =
  /** A job entered the ledger (from this process or another). */
  | { readonly type: 'created'; readonly job: JobRecord }
  /**
   * A job's state changed; `job` is the record as it is now, `changed` the names of its
   * fields that differ from when it was last reported (`state` among them).
   */
  | {
      readonly type: 'state-changed';
      readonly job: JobRecord;
      readonly from: JobState;
      readonly changed: readonly JobField[];
    }
  /**
   * A job's record changed without a state change (a cancel asked for, an error cleared…);
   * `changed` names the fields that differ from when it was last reported.
   */
  | { readonly type: 'updated'; readonly job: JobRecord; readonly changed: readonly JobField[] }
  /**
   * A job is no longer in the ledger (`yonder rm`, `prune` or retention, from this process or
   * another): any job the ledger held while watched, finished or not.
   */
  | { readonly type: 'removed'; readonly id: string }
  /** A running job's log is longer than when last looked at (only with `logSizes`). */
  | {
      readonly type: 'log-grew';
      readonly job: JobRecord;
      readonly size: number;
      readonly previousSize: number;
    }
  /**
   * A refresh met an error: for the jobs of one target (`target` and `backend` set, the error
   * as recorded on those jobs), or the refresh as a whole failed (`target` null). The jobs
   * keep their states; a later healthy poll clears the error (reported as `updated`).
   */
  | {
      readonly type: 'poll-failed';
      readonly target: string | null;
      readonly backend: string | null;
      readonly jobIds: readonly string[];
      readonly error: { readonly code: string; readonly message: string };
      readonly at: string;
    }
  /** The ledger could not be read this time; the watch goes on. */
  | { readonly type: 'error'; readonly error: { readonly code: string; readonly message: string } }
  /**
   * The consumer fell behind: this many of the oldest events waiting for it were dropped.
   * Read the ledger again to catch up; events after this one are complete again.
   */
  | { readonly type: 'lagged'; readonly dropped: number };

export interface WatchJobsOptions {
  /** Stops the watch; the iterator then ends. */
  readonly signal?: AbortSignal;
  /** How often the ledger is read for changes from anywhere. Default 1000 ms. */
  readonly intervalMs?: number;
  /**
   * Refresh active jobs through the manager, each target no more often than its profile's
   * `pollSeconds` (default 2): one poll per target, shared with other processes through the
   * store's lease as every refresh is. Default true; false only observes the ledger.
   */
  readonly refresh?: boolean;
  /** Report `log-grew` for running jobs, by log size: one log read per running job per interval. Default false. */
  readonly logSizes?: boolean;
  /** Events held for a consumer that is not reading before the oldest are dropped and `lagged` reported. Default 1000. */
  readonly bufferSize?: number;
  /** How many of the newest jobs are read each time to find new ones (doubled until a known one is met). Default 20. */
  readonly recentWindow?: number;
}

/** What `watchJobs` returns: an async iterator of events, with a way to stop it. */
export interface JobWatch extends AsyncIterableIterator<JobEvent> {
  /** Resolves once the ledger as it is now has been read: every change after that is reported. */
  readonly ready: Promise<void>;
  /** Stop watching: waiting reads end, and so does the iterator. */
  close(): void;
}

/** The parts of a JobManager a watch uses. */
export type WatchedManager = Pick<JobManager, 'store' | 'refresh' | 'logs'>;

interface Seen {
  readonly record: JobRecord;
  readonly revision: number;
  readonly state: JobState;
  readonly updatedAt: string;
  readonly error: string | null;
}

const DEFAULT_POLL_SECONDS = 2;
/** Reading every id of the ledger takes at most 1 part in this many of a watch's time. */
const IDS_SHARE = 20;

function seen(job: JobRecord): Seen {
  return {
    record: job,
    revision: job.revision,
    state: job.state,
    updatedAt: job.updatedAt,
    error: job.error ? `${job.error.code}\n${job.error.message}` : null,
  };
}

/**
 * The fields of `after` whose values differ from `before`'s (compared as JSON), in the record's
 * order; the ledger's bookkeeping (`revision`, `updatedAt`) is left out, as it changes with
 * every write.
 */
export function changedFields(before: JobRecord, after: JobRecord): JobField[] {
  const names = new Set([...Object.keys(after), ...Object.keys(before)]);
  names.delete('revision');
  names.delete('updatedAt');
  const field = (record: JobRecord, name: string) =>
    JSON.stringify((record as unknown as Record<string, unknown>)[name] ?? null);
  return [...names].filter((name) => field(before, name) !== field(after, name)) as JobField[];
}

function errorJson(error: unknown): { code: string; message: string } {
  const { code, message } = toYonderError(error);
  return { code, message };
}

/** A bounded queue between the watch loop and its consumer. */
function createEventQueue(limit: number) {
  const items: JobEvent[] = [];
  const waiting: Array<(result: IteratorResult<JobEvent>) => void> = [];
  let dropped = 0;
  let closed = false;
  return {
    push(event: JobEvent): void {
      if (closed) return;
      const reader = waiting.shift();
      if (reader) {
        reader({ value: event, done: false });
        return;
      }
      items.push(event);
      if (items.length > limit) {
        items.shift();
        dropped += 1;
      }
    },
    next(): Promise<IteratorResult<JobEvent>> {
      if (dropped > 0) {
        const count = dropped;
        dropped = 0;
        return Promise.resolve({ value: { type: 'lagged', dropped: count }, done: false });
      }
      const event = items.shift();
      if (event) return Promise.resolve({ value: event, done: false });
      if (closed) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => waiting.push(resolve));
    },
    close(): void {
      closed = true;
      items.length = 0;
      dropped = 0;
      for (const reader of waiting.splice(0)) reader({ value: undefined, done: true });
    },
  };
}

/**
 * Watch the ledger: every job created, every state change, every record change and every
 * failed poll, whichever yonder process made it, without a daemon. While it runs it refreshes
 * active jobs through the manager (each target at its profile's poll interval) and reads the
 * ledger every `intervalMs` to diff it against what it saw — and at once when the store says
 * a job was written (`StoreV1.subscribe`, PostgreSQL's `LISTEN/NOTIFY`), the interval then
 * being the fallback. Events wait in a bounded queue;
 * a consumer that falls behind gets `lagged` instead of unbounded memory.
 *
 * @example
 * const watch = watchJobs(manager, { signal });
 * await watch.ready;
 * for await (const event of watch) if (event.type === 'state-changed') console.log(event.job.state);
 */
export function watchJobs(manager: WatchedManager, options: WatchJobsOptions = {}): JobWatch {
  const intervalMs = options.intervalMs ?? 1000;
  const queue = createEventQueue(Math.max(1, options.bufferSize ?? 1000));
  const window = Math.max(1, options.recentWindow ?? 20);
  const stop = new AbortController();
  const store = manager.store;
  /** Jobs not yet terminal, as last seen. */
  const tracked = new Map<string, Seen>();
  /** Every id in the ledger as last read, so that a new one is told apart and a removed one noticed. */
  const known = new Set<string>();
  const logSizes = new Map<string, number>();
  const lastRefresh = new Map<string, number>();
  let activeJobs: JobRecord[] = [];
  /** When (monotonic ms) every id of the ledger is read again, to notice removed jobs. */
  let idsDueAt = 0;

  /** Ends the wait between two reads early: a store said a job was written. */
  let wake: (() => void) | undefined;
  let woken = false;
  const notified = (): void => {
    woken = true;
    wake?.();
  };
  const unsubscribe = store.subscribe?.(notified).catch(() => undefined);
  /** Until `intervalMs` have passed, a notification came, or the watch was closed. */
  const pause = (): Promise<void> =>
    new Promise((resolve) => {
      if (woken || stop.signal.aborted) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        stop.signal.removeEventListener('abort', done);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, intervalMs);
      stop.signal.addEventListener('abort', done, { once: true });
      wake = done;
    });

  const close = (): void => {
    stop.abort();
    queue.close();
    void unsubscribe?.then((stopListening) => stopListening?.()).catch(() => undefined);
  };
  if (options.signal?.aborted) close();
  else options.signal?.addEventListener('abort', close, { once: true });

  const remember = (job: JobRecord): void => {
    known.add(job.id);
    if (isTerminal(job.state)) tracked.delete(job.id);
    else tracked.set(job.id, seen(job));
  };

  /** Jobs that entered the ledger since last time: the newest, read until a known one is met. */
  const newJobs = async (): Promise<JobRecord[]> => {
    for (let limit = window; ; limit *= 2) {
      const { jobs } = await store.listJobs({ limit });
      const fresh = jobs.filter((job) => !known.has(job.id));
      if (fresh.length < jobs.length || jobs.length < limit) {
        // Oldest first: the store lists newest first, and the sort keeps ties in that order.
        return fresh.reverse().sort((a, b) => a.createdAt.localeCompare(b.createdAt));
      }
    }
  };

  const refreshDue = async (): Promise<void> => {
    // Intervals on the monotonic clock: a wall clock stepped back must not stop refreshes.
    const now = performance.now();
    const groups = new Map<string, { ids: string[]; everyMs: number }>();
    for (const job of activeJobs) {
      const key = jobRoute(job);
      const everyMs = (job.profileSnapshot.pollSeconds ?? DEFAULT_POLL_SECONDS) * 1000;
      const group = groups.get(key) ?? { ids: [], everyMs };
      group.ids.push(job.id);
      group.everyMs = Math.min(group.everyMs, everyMs);
      groups.set(key, group);
    }
    const ids: string[] = [];
    for (const [key, group] of groups) {
      if (now - (lastRefresh.get(key) ?? Number.NEGATIVE_INFINITY) < group.everyMs) continue;
      lastRefresh.set(key, now);
      ids.push(...group.ids);
    }
    for (const key of lastRefresh.keys()) if (!groups.has(key)) lastRefresh.delete(key);
    if (ids.length === 0) return;
    try {
      await manager.refresh({ ids });
    } catch (error) {
      queue.push({
        type: 'poll-failed',
        target: null,
        backend: null,
        jobIds: ids,
        error: errorJson(error),
        at: new Date().toISOString(),
      });
    }
  };

  const readLogSizes = async (jobs: readonly JobRecord[]): Promise<void> => {
    for (const job of jobs) {
      if (job.state !== 'running') {
        logSizes.delete(job.id);
        continue;
      }
      let size: number;
      try {
        const { chunk } = await manager.logs(job.id, { lines: 0 });
        size = chunk.exists ? chunk.offset : 0;
      } catch {
        continue;
      }
      const previousSize = logSizes.get(job.id) ?? 0;
      logSizes.set(job.id, size);
      if (size > previousSize) queue.push({ type: 'log-grew', job, size, previousSize });
    }
    for (const id of logSizes.keys()) if (!tracked.has(id)) logSizes.delete(id);
  };

  /** A job the ledger no longer holds: forgotten, and reported once. */
  const removed = (id: string): void => {
    known.delete(id);
    tracked.delete(id);
    queue.push({ type: 'removed', id });
  };

  /** Read the ledger and report what differs from what was seen. */
  const diff = async (): Promise<void> => {
    // The ids first: a job created after this read is found by the reads below, and one
    // removed after it is noticed next time. Reading every id costs with the ledger's size
    // (about 0.3 s for 100,000 jobs): it is read at most a twentieth of the time.
    if (performance.now() >= idsDueAt) {
      const started = performance.now();
      const present = new Set(await store.findJobIds(''));
      for (const id of known) if (!present.has(id)) removed(id);
      idsDueAt = performance.now() + Math.max(0, (performance.now() - started) * IDS_SHARE);
    }
    const [{ jobs: active }, fresh] = await Promise.all([
      store.listJobs({ activeOnly: true }),
      newJobs(),
    ]);
    const current = new Map<string, JobRecord>();
    for (const job of [...active, ...fresh]) current.set(job.id, job);
    // Jobs followed until now that left the active list: finished, or gone.
    for (const id of tracked.keys()) {
      if (current.has(id)) continue;
      const job = await store.getJob(id);
      if (job) current.set(id, job);
      else removed(id);
    }
    const failures = new Map<string, { job: JobRecord; ids: string[] }>();
    for (const job of current.values()) {
      const before = tracked.get(job.id);
      const now = seen(job);
      if (!known.has(job.id)) queue.push({ type: 'created', job });
      else if (before && before.revision !== now.revision) {
        const changed = changedFields(before.record, job);
        if (before.state !== now.state)
          queue.push({ type: 'state-changed', job, from: before.state, changed });
        else queue.push({ type: 'updated', job, changed });
      }
      if (job.error && now.error !== (before?.error ?? null) && !isTerminal(job.state)) {
        const key = jobRoute(job);
        const group = failures.get(key) ?? { job, ids: [] };
        group.ids.push(job.id);
        failures.set(key, group);
      }
      remember(job);
    }
    for (const { job, ids } of failures.values()) {
      const error = job.error as { code: string; message: string };
      queue.push({
        type: 'poll-failed',
        target: job.target,
        backend: job.backend,
        jobIds: ids,
        error: { code: error.code, message: error.message },
        at: job.updatedAt,
      });
    }
    activeJobs = [...current.values()].filter((job) => !isTerminal(job.state));
    if (options.logSizes) await readLogSizes(activeJobs);
  };

  const baseline = async (): Promise<void> => {
    const [{ jobs: active }, { jobs: recent }, ids] = await Promise.all([
      store.listJobs({ activeOnly: true }),
      store.listJobs({ limit: window }),
      store.findJobIds(''),
    ]);
    for (const id of ids) known.add(id);
    for (const job of [...recent, ...active]) remember(job);
    activeJobs = active;
    if (options.logSizes) {
      for (const job of active) {
        if (job.state !== 'running') continue;
        try {
          const { chunk } = await manager.logs(job.id, { lines: 0 });
          logSizes.set(job.id, chunk.exists ? chunk.offset : 0);
        } catch {
          // A log that cannot be read now is looked at again on the next round.
        }
      }
    }
  };

  const ready = (async () => {
    if (stop.signal.aborted) return;
    try {
      await baseline();
    } catch (error) {
      queue.push({ type: 'error', error: errorJson(error) });
    }
  })();

  void (async () => {
    await ready;
    while (!stop.signal.aborted) {
      await pause();
      if (stop.signal.aborted) return;
      woken = false;
      try {
        if (options.refresh ?? true) await refreshDue();
        if (stop.signal.aborted) return;
        await diff();
      } catch (error) {
        queue.push({ type: 'error', error: errorJson(error) });
      }
    }
  })();

  const watch: JobWatch = {
    ready,
    close,
    next: () => queue.next(),
    async return() {
      close();
      return { value: undefined, done: true };
    },
    async throw(error?: unknown) {
      close();
      throw error;
    },
    [Symbol.asyncIterator]() {
      return watch;
    },
  };
  return watch;
}
