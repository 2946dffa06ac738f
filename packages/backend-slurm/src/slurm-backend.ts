/** The Slurm backend's factory: its capabilities and profile checks, with submit, recover, poll and cancel from their own files. */
import { type BackendV1, type LogChunkV1, type ValidationIssue, YonderError } from '@yonder/core';
import { checkAbsolutePath, readRemoteLog, removeJobDirectories } from '@yonder/core/backend-kit';
import { slurmCancel } from './slurm-cancel.js';
import { defaultsProblems } from './slurm-defaults-check.js';
import { type SlurmOptions, SlurmOptionsSchema } from './slurm-options.js';
import { slurmPoll } from './slurm-poll.js';
import { slurmProbe, submitBlockers } from './slurm-probe.js';
import { slurmRecover } from './slurm-recover.js';
import { slurmSubmit } from './slurm-submit.js';

export const SLURM_BACKEND_ID = 'slurm';
/** A submit younger than this may still be in flight: recovery does not give up on it yet. */
const SLURM_SUBMIT_GRACE_SECONDS = 200;
/**
 * A job no source vouches for is lost only after this long (and a few healthy polls): sacct
 * lags behind squeue, and a purged job's record may take a while to reach accounting.
 */
const SLURM_ABSENT_GRACE_SECONDS = 120;

/** What a caller (a test, mostly) may set when making the backend; the defaults suit a real cluster. */
export interface SlurmBackendSettings {
  /**
   * Seconds after a job entered the ledger before an interrupted submit that Slurm does not
   * know is taken as never submitted; declared as `capabilities.submitGraceSeconds`.
   * Default SLURM_SUBMIT_GRACE_SECONDS (200: longer than sbatch may take under load).
   */
  readonly submitGraceSeconds?: number;
  /**
   * Seconds a job may be missing from every source (squeue, sacct, its wrapper's files) before
   * the manager declares it lost; declared as `capabilities.absentGraceSeconds`.
   * Default SLURM_ABSENT_GRACE_SECONDS (120).
   */
  readonly absentGraceSeconds?: number;
}

/**
 * The Slurm backend: sbatch, squeue, sacct and scancel through the profile's transport
 * (this machine when the profile has no host, a login node over SSH when it has one).
 * @throws RangeError when `submitGraceSeconds` or `absentGraceSeconds` is not a finite number
 *   of seconds, 0 or more.
 */
export function createSlurmBackend(settings: SlurmBackendSettings = {}): BackendV1<SlurmOptions> {
  const submitGraceSeconds = seconds('submitGraceSeconds', settings, SLURM_SUBMIT_GRACE_SECONDS);
  const absentGraceSeconds = seconds('absentGraceSeconds', settings, SLURM_ABSENT_GRACE_SECONDS);
  return {
    specificationVersion: 'v1',
    id: SLURM_BACKEND_ID,
    capabilities: {
      resources: ['time', 'cpus', 'memory', 'gpus', 'nodes', 'partition', 'account', 'qos'],
      schedulerOptions: true,
      host: 'optional',
      recoverSubmit: true,
      logs: true,
      submitGraceSeconds,
      absentGraceSeconds,
      transport: 'ssh',
      containers: ['apptainer', 'podman'],
    },
    optionsSchema: SlurmOptionsSchema,

    validateProfile(profile) {
      // The schema's own issues are reported beside these; this never throws.
      const issues: ValidationIssue[] = [];
      const binDir = profile.options?.binDir;
      if (binDir !== undefined) issues.push(...checkAbsolutePath(binDir, 'options.binDir'));
      if (profile.workdir?.includes('\\')) {
        issues.push({
          path: 'workdir',
          message: 'may not contain "\\" (Slurm reads it in output file names)',
        });
      }
      if (profile.workdir?.includes('%')) {
        issues.push({
          path: 'workdir',
          message: 'may not contain "%" (Slurm reads it as a file name pattern)',
        });
      }
      return issues;
    },

    targetKey(profile, options) {
      return `slurm:${profile.host ?? 'local'}:${options.binDir ?? ''}`;
    },

    // profile check: the target, and then the profile's own defaults on it.
    async probe(profile, context) {
      const report = await slurmProbe(profile, context.options, context, true);
      if (submitBlockers(report).length > 0) return report;
      const problems = await defaultsProblems(profile, context.options, context);
      return problems.length === 0
        ? report
        : { ...report, ok: false, problems: [...report.problems, ...problems] };
    },

    async submit(request, context) {
      const [outcome] = await slurmSubmit([request], context);
      if (!outcome || 'error' in outcome)
        throw outcome?.error ?? new YonderError('E_TRANSPORT', 'sbatch gave no answer.');
      return outcome;
    },

    submitMany: (requests, context) => slurmSubmit(requests, context),

    recover: (requests, context) => slurmRecover(requests, context, submitGraceSeconds),

    poll: (jobs, context) => slurmPoll(jobs, context),

    cancel: (jobs, context) => slurmCancel(jobs, context),

    // The job directory (its script, log and exit-code file) goes when the job is forgotten.
    cleanup: (jobs, context) =>
      removeJobDirectories(
        context.transport,
        jobs.map((job) => ({ id: job.id, jobDir: String(job.data.jobDir ?? '') })),
      ),

    readLog: (job, readOptions, context): Promise<LogChunkV1> =>
      readRemoteLog(context.transport, String(job.data.log ?? ''), readOptions),
  };
}

/** One of the settings in seconds, or its default. */
function seconds(
  name: keyof SlurmBackendSettings,
  settings: SlurmBackendSettings,
  fallback: number,
): number {
  const value = settings[name] ?? fallback;
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`${name} must be 0 or more, got ${value}`);
  return value;
}
