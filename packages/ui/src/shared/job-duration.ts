/** How long a job ran, measured as the CLI measures it: from the job's own start to its own end (or to now while it runs). Shared by the server (sorting) and the page (showing). */

/** The times a duration is measured from. */
export interface JobTimes {
  /** When the job itself started, as its target recorded it; null or absent until known. */
  readonly startedAt?: string | null;
  /** When the job ended; null while it runs. */
  readonly finishedAt: string | null;
}

/**
 * How long the job ran, or has been running until `now` (ms since the epoch), in ms; null
 * while its start is not known. Not `submittedAt`: a batch job's submission is recorded after
 * it has started, and a job waits in a queue before it starts.
 */
export function jobDuration(job: JobTimes, now: number): number | null {
  if (!job.startedAt) return null;
  const start = Date.parse(job.startedAt);
  const end = job.finishedAt ? Date.parse(job.finishedAt) : now;
  if (!Number.isFinite(start) || !Number.isFinite(end)) return null;
  return Math.max(0, end - start);
}
