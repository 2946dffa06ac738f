/** Job references as people type them: a full id or an unambiguous prefix, turned into the job's record. */
import { YonderError } from '../errors/yonder-error.js';
import type { JobRecord } from '../spec/job.js';
import type { StoreV1 } from '../spec/store/v1/store-v1.js';

/**
 * Resolve a full id or an unambiguous prefix.
 * @throws YonderError `E_NO_SUCH_JOB` or `E_AMBIGUOUS_JOB`.
 */
export async function resolveJob(store: StoreV1, reference: string): Promise<JobRecord> {
  const ref = reference.trim();
  if (!/^[0-9a-f]{1,64}$/i.test(ref)) {
    throw new YonderError(
      'E_NO_SUCH_JOB',
      `"${reference}" is not a job id (ids are hexadecimal, e.g. 3f9a1c2b7d4e).`,
    );
  }
  const id = ref.toLowerCase();
  const exact = await store.getJob(id);
  if (exact) return exact;
  const ids = await store.findJobIds(id);
  if (ids.length === 0) {
    // Which jobs exist is for the front end to show (the CLI names `yonder list --all`).
    throw new YonderError('E_NO_SUCH_JOB', `No job matches "${reference}".`, {
      data: { reference },
    });
  }
  if (ids.length > 1) {
    throw new YonderError(
      'E_AMBIGUOUS_JOB',
      `"${reference}" matches ${ids.length} jobs (${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}); give more of the id.`,
    );
  }
  const job = await store.getJob(ids[0] as string);
  if (!job) throw new YonderError('E_NO_SUCH_JOB', `No job matches "${reference}".`);
  return job;
}

/** Resolve several references, in order. */
export function resolveJobs(store: StoreV1, references: readonly string[]): Promise<JobRecord[]> {
  return Promise.all(references.map((reference) => resolveJob(store, reference)));
}
