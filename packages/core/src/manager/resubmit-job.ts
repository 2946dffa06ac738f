/** Submitting a job again from its record: the same program, name, environment, resources, scheduler options, working directory, container and settings (kept beside the record), through its profile as it is now. */
import { YonderError } from '../errors/yonder-error.js';
import type { JsonObject } from '../json/json-value.js';
import { parseJson } from '../json/parse-json.js';
import type { JobRecord, JobSpec } from '../spec/job.js';
import { dependencyText } from './dependencies.js';
import type { ManagerContext } from './manager-context.js';

/**
 * The spec a job was submitted with, read back from its record and the settings kept beside
 * it. Secrets are never kept: `secrets` must give a value for each name the job had.
 * @throws YonderError `E_SETTINGS_MISSING` when the job had settings the store no longer has;
 *   `E_SECRET_MISSING` when a secret's value is not given.
 */
export async function specOf(
  context: ManagerContext,
  job: JobRecord,
  secrets: Readonly<Record<string, string>> = {},
): Promise<JobSpec> {
  const spec: JobSpec = {
    argv: [...job.spec.argv],
    name: job.name,
    env: { ...job.spec.env },
    resources: { ...job.spec.resources },
    schedulerOptions: [...job.spec.schedulerOptions],
  };
  if (job.spec.cwd) spec.cwd = job.spec.cwd;
  // The container it ran in, as it was resolved (the profile's binds it had are among its own:
  // resolving again mounts each bind once).
  const container = job.spec.container;
  if (container)
    spec.container = {
      runtime: container.runtime,
      image: container.image,
      binds: [...container.binds],
      gpus: container.gpus,
      env: { ...container.env },
    };
  // Its parents are kept: a parent whose condition can no longer hold is refused by the submit.
  if (job.after && job.after.length > 0) spec.after = job.after.map(dependencyText);
  if (job.spec.settingsSha256 !== null) {
    const text = await context.store.getJobSettings?.(job.id);
    const parsed = text === undefined ? undefined : parseJson(text);
    if (!parsed?.ok) {
      throw new YonderError(
        'E_SETTINGS_MISSING',
        `Job ${job.id} was submitted with settings that the ledger does not have (${text === undefined ? 'not kept: an older yonder submitted it' : 'unreadable'}); submit it again with --settings.`,
      );
    }
    spec.settings = parsed.value as JsonObject;
  }
  const missing = job.spec.secretNames.filter((name) => secrets[name] === undefined);
  if (missing.length > 0) {
    throw new YonderError(
      'E_SECRET_MISSING',
      `Job ${job.id} had the secret${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, which yonder never keeps; give ${missing.length > 1 ? 'their values' : 'its value'} again: set ${missing.map((name) => `$${name}`).join(', ')} in the environment of yonder resubmit (from a program: the secrets option of manager.resubmit).`,
      { data: { secrets: missing } },
    );
  }
  if (job.spec.secretNames.length > 0)
    spec.secrets = Object.fromEntries(
      job.spec.secretNames.map((name) => [name, secrets[name] as string]),
    );
  return spec;
}
