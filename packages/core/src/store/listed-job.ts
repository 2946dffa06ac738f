/** A job as listings show it: its record without the ledger's bookkeeping (revision, submitter, misses, the kept log tail). */
import type { JobRecord } from '../spec/job.js';

/**
 * The record without `revision`, `submitter`, `misses` and `logTail`, its other keys in the
 * record's order: what `yonder list --json` and `status --json` print of a job, and what a
 * store's `listing()` gives as each entry's JSON (`JSON.stringify(listedJob(record))`).
 */
export function listedJob(job: JobRecord): Record<string, unknown> {
  const {
    revision: _revision,
    submitter: _submitter,
    misses: _misses,
    logTail: _logTail,
    ...rest
  } = job;
  return rest;
}
