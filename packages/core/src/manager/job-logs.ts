/** Reading a job's output through its backend: the last lines, or followed until the job ends and everything it wrote is read. */
import { YonderError } from '../errors/yonder-error.js';
import type { LogChunkV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import { isTerminal } from '../state/job-states.js';
import { backendJob, type ManagerContext } from './manager-context.js';
import { refreshJobs } from './refresh-jobs.js';
import { waitLoop } from './wait-loop.js';

export interface FollowOptions {
  lines?: number;
  onNotice?: (text: string) => void;
  signal?: AbortSignal;
}

/**
 * A piece of a job's output, from an offset or its last lines.
 * @throws YonderError `E_LOG_UNAVAILABLE` when the backend cannot read output.
 */
export async function readJobLog(
  context: ManagerContext,
  job: JobRecord,
  options: { tailLines?: number; offset?: number },
): Promise<LogChunkV1> {
  const backend = await context.resolveBackend(job.backend, job.profileSnapshot);
  if (!backend.capabilities.logs) {
    throw new YonderError('E_LOG_UNAVAILABLE', `The ${backend.id} backend cannot read job output.`);
  }
  if (job.externalId === null) {
    return { exists: false, text: '', offset: 0, message: 'The job has not been submitted yet.' };
  }
  return backend.readLog(
    backendJob(job, backend),
    options,
    await context.backendContext(job.profileSnapshot, backend),
  );
}

/**
 * Stream a job's output to `write` until the job is terminal and everything it wrote has been
 * read, or the signal aborts. `onNotice` gets messages for people (e.g. the log does not exist
 * yet), each once. Returns the job as last seen.
 */
export async function followJobLog(
  context: ManagerContext,
  initial: JobRecord,
  write: (text: string) => void,
  options: FollowOptions = {},
): Promise<JobRecord> {
  let job = initial;
  let chunk = await readJobLog(context, job, { tailLines: options.lines ?? 10 });
  let offset = chunk.offset;
  let noticed = false;
  const notice = (): void => {
    if (!chunk.exists && chunk.message && !noticed) {
      options.onNotice?.(chunk.message);
      noticed = true;
    }
  };
  if (chunk.text) write(chunk.text);
  else notice();
  if (options.signal?.aborted) return job;
  await waitLoop(
    async () => {
      const wasTerminal = isTerminal(job.state);
      if (!wasTerminal) {
        await refreshJobs(context, { ids: [job.id] });
        job = (await context.store.getJob(job.id)) ?? job;
      }
      chunk = await readJobLog(context, job, { offset });
      if (chunk.text) {
        write(chunk.text);
        offset = chunk.offset;
        return 'progress';
      }
      notice();
      // Once terminal, one more read finds whatever the job wrote last.
      if (wasTerminal) return 'done';
      return isTerminal(job.state) ? 'progress' : 'idle';
    },
    {
      backoff: context.backoff,
      clock: context.clock,
      ...(options.signal ? { signal: options.signal } : {}),
      ceilingMs: () =>
        Math.max(context.backoff.maxMs, (job.profileSnapshot.pollSeconds ?? 2) * 1000),
    },
  );
  return job;
}
