/** The Grid Engine backend's factory: its capabilities and profile checks, with submit, poll, cancel and probe from their own files. */
import type { BackendV1, LogChunkV1, ValidationIssue } from '@yonder/core';
import { checkAbsolutePath, readRemoteLog, removeJobDirectories } from '@yonder/core/backend-kit';
import { gridEngineCancel } from './gridengine-cancel.js';
import { type GridEngineOptions, GridEngineOptionsSchema } from './gridengine-options.js';
import { gridEnginePoll } from './gridengine-poll.js';
import { gridEngineProbe } from './gridengine-probe.js';
import { gridEngineRecover } from './gridengine-recover.js';
import { gridEngineSubmit, pathProblem } from './gridengine-submit.js';

export const GRIDENGINE_BACKEND_ID = 'gridengine';
/**
 * A job no source vouches for is lost only after this long (and a few healthy polls): with a
 * site's default accounting_flush_time, qacct may learn of a finished job 15 s after qstat
 * forgot it, and a restarted qmaster takes a while to list its jobs again.
 */
const GRIDENGINE_ABSENT_GRACE_SECONDS = 120;
/** A submit younger than this may still be in flight: recovery does not give up on it yet. */
const GRIDENGINE_SUBMIT_GRACE_SECONDS = 200;

/** What a caller (a test, mostly) may set when making the backend; the defaults suit a real cluster. */
export interface GridEngineBackendSettings {
  /**
   * Seconds a job may be missing from qstat, qacct and its wrapper's files before the manager
   * declares it lost (a job deleted while pending leaves no record anywhere, so a cancelled
   * pending job ends this long after its qdel); `capabilities.absentGraceSeconds`. Default 120.
   */
  readonly absentGraceSeconds?: number;
  /**
   * Seconds after a job entered the ledger before an interrupted submit that Grid Engine does
   * not know (by its job name, in qstat or qacct) is taken as never submitted;
   * `capabilities.submitGraceSeconds`. Default 200 (longer than qsub may take under load).
   */
  readonly submitGraceSeconds?: number;
}

/**
 * The Grid Engine backend (Son of Grid Engine, Open Grid Scheduler 8.1): qsub, qstat, qacct
 * and qdel through the profile's transport (this machine when the profile has no host, a
 * submit host over SSH when it has one).
 * @throws RangeError when `absentGraceSeconds` or `submitGraceSeconds` is not a finite number of
 *   seconds, 0 or more.
 */
export function createGridEngineBackend(
  settings: GridEngineBackendSettings = {},
): BackendV1<GridEngineOptions> {
  const absentGraceSeconds = seconds(
    settings,
    'absentGraceSeconds',
    GRIDENGINE_ABSENT_GRACE_SECONDS,
  );
  const submitGraceSeconds = seconds(
    settings,
    'submitGraceSeconds',
    GRIDENGINE_SUBMIT_GRACE_SECONDS,
  );
  return {
    specificationVersion: 'v1',
    id: GRIDENGINE_BACKEND_ID,
    capabilities: {
      resources: ['time', 'cpus', 'partition'],
      schedulerOptions: true,
      host: 'optional',
      recoverSubmit: true,
      logs: true,
      absentGraceSeconds,
      submitGraceSeconds,
      transport: 'ssh',
    },
    optionsSchema: GridEngineOptionsSchema,

    validateProfile(profile) {
      // The schema's own issues are reported beside these; this never throws.
      const issues: ValidationIssue[] = [];
      if (profile.workdir !== undefined) {
        issues.push(...checkAbsolutePath(profile.workdir, 'workdir'));
        const problem = pathProblem(profile.workdir);
        if (problem) issues.push({ path: 'workdir', message: problem });
      }
      return issues;
    },

    targetKey(profile) {
      return `gridengine:${profile.host ?? 'local'}`;
    },

    probe: (profile, context) => gridEngineProbe(profile, context.options, context, true),

    submit: (request, context) => gridEngineSubmit(request, context),

    recover: (requests, context) => gridEngineRecover(requests, context, submitGraceSeconds),

    poll: (jobs, context) => gridEnginePoll(jobs, context),

    cancel: (jobs, context) => gridEngineCancel(jobs, context),

    // The job directory (its script, argv, log and exit-code file) goes when the job is forgotten.
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
  settings: GridEngineBackendSettings,
  name: keyof GridEngineBackendSettings,
  fallback: number,
): number {
  const value = settings[name] ?? fallback;
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`${name} must be 0 or more, got ${value}`);
  return value;
}
