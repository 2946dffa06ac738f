/** Resubmitting a job from the page: the same spec, as the ledger kept it, through the same profile with `manager.submit`. */
import { type JobManager, type JobRecord, type JobSpec, toYonderError } from '@yonder/core';

/** The spec a job was submitted with, or why it cannot be sent again from the ledger alone. */
export function resubmitSpec(job: JobRecord): { spec: JobSpec } | { reason: string } {
  if (job.spec.secretNames.length > 0) {
    return {
      reason: `it had secrets (${job.spec.secretNames.join(', ')}), whose values the ledger never keeps; submit it again with yonder submit --secret`,
    };
  }
  if (job.spec.settingsSha256 !== null) {
    return {
      reason:
        'it had a settings file, which the ledger keeps only as a checksum; submit it again with yonder submit --settings',
    };
  }
  const spec: JobSpec = {
    argv: [...job.spec.argv],
    name: job.name,
    env: { ...job.spec.env },
    resources: { ...job.spec.resources },
    schedulerOptions: [...job.spec.schedulerOptions],
  };
  if (job.spec.cwd !== null) spec.cwd = job.spec.cwd;
  return { spec };
}

export type ResubmitOutcome =
  | { readonly from: string; readonly ok: true; readonly id: string }
  | { readonly from: string; readonly ok: false; readonly message: string };

/** Submit each job again, one by one; a job that cannot be resubmitted says why. */
export async function resubmitJobs(
  manager: JobManager,
  ids: readonly string[],
): Promise<ResubmitOutcome[]> {
  const outcomes: ResubmitOutcome[] = [];
  for (const id of ids) {
    try {
      const job = await manager.resolve(id);
      const prepared = resubmitSpec(job);
      if ('reason' in prepared) {
        outcomes.push({ from: job.id, ok: false, message: `Not resubmitted: ${prepared.reason}.` });
        continue;
      }
      const submitted = await manager.submit(prepared.spec, { profile: job.profile });
      outcomes.push({ from: job.id, ok: true, id: submitted.id });
    } catch (error) {
      outcomes.push({ from: id, ok: false, message: toYonderError(error).message });
    }
  }
  return outcomes;
}
