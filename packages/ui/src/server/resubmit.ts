/** Resubmitting a job from the page: `manager.resubmit`, as `yonder resubmit` does (the same spec, container and kept settings, through the same profile); only a job with secrets, whose values the page cannot give, is left to the CLI. */
import { type JobManager, type JobRecord, toYonderError } from '@yonder/core';

/** Whether the page can submit the job again, or why not. */
export async function resubmitCheck(
  manager: JobManager,
  job: JobRecord,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  if (job.spec.secretNames.length > 0) {
    const names = job.spec.secretNames;
    return {
      ok: false,
      reason: `it had secrets (${names.join(', ')}), whose values yonder never keeps; run yonder resubmit ${job.id} with ${names.map((name) => `$${name}`).join(', ')} set in its environment`,
    };
  }
  if (job.spec.settingsSha256 !== null) {
    const kept = await manager.store.getJobSettings?.(job.id);
    if (kept === undefined) {
      return {
        ok: false,
        reason:
          'its settings were not kept beside its record (an older yonder submitted it); submit it again with yonder submit --settings',
      };
    }
  }
  return { ok: true };
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
      const check = await resubmitCheck(manager, job);
      if (!check.ok) {
        outcomes.push({ from: job.id, ok: false, message: `Not resubmitted: ${check.reason}.` });
        continue;
      }
      const submitted = await manager.resubmit(job.id);
      outcomes.push({ from: job.id, ok: true, id: submitted.id });
    } catch (error) {
      outcomes.push({ from: id, ok: false, message: toYonderError(error).message });
    }
  }
  return outcomes;
}
