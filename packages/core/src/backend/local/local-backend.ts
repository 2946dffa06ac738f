import { spawn } from 'node:child_process';
import { closeSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { YonderError } from '../../errors/yonder-error.js';
import {
  createJobDirectory,
  ensurePrivateDirectory,
  openExclusive,
  writeExclusive,
} from '../../fs/exclusive-files.js';
import type { JsonObject } from '../../json/json-value.js';
import { isProcessAlive, readBootId, readProcessIdentity } from '../../process/process-identity.js';
import { signalName } from '../../process/signal-names.js';
import { renderEnvFile } from '../../shell/render-env-file.js';
import type {
  BackendContextV1,
  BackendJobV1,
  BackendV1,
  CancelOutcomeV1,
  LogChunkV1,
  ObservationV1,
  SubmitRequestV1,
  SubmitResultV1,
} from '../../spec/backend/v1/backend-v1.js';
import type { ProcessIdentity } from '../../spec/job.js';
import type { Profile } from '../../spec/profile.js';
import { replacePlaceholder } from '../../template/render-template.js';
import { readLogFile } from './read-log-file.js';
import { JOB_WRAPPER_SCRIPT } from './wrapper-script.js';

export const LOCAL_BACKEND_ID = 'local';

/** Seconds after a job entered the ledger before an unstarted local submit counts as interrupted. */
const LOCAL_SUBMIT_GRACE_SECONDS = 30;
/** How long a job directory may exist without wrapper.pid before the job is taken as never started. */

/** The directory under which the local backend makes job directories. */
export function localWorkdir(profile: Profile, stateDirectory: string): string {
  return profile.workdir ?? join(stateDirectory, 'runs');
}

interface LocalJobData extends JsonObject {
  jobDir: string;
  log: string;
  pid: number;
  startTime: string;
  bootId: string;
  host: string;
}

function identityOf(data: JsonObject): ProcessIdentity | null {
  if (typeof data.pid !== 'number' || typeof data.startTime !== 'string') return null;
  return {
    pid: data.pid,
    startTime: data.startTime,
    bootId: String(data.bootId ?? ''),
    host: String(data.host ?? ''),
  };
}

/**
 * The pid and start time the wrapper recorded for itself (`wrapper.pid`: "pid start"). The
 * start time is the wrapper's own, so a pid recycled since is never taken for it. Null when
 * the wrapper never started.
 */
export function readWrapperPid(jobDir: string): { pid: number; startTime: string } | null {
  let text: string;
  try {
    text = readFileSync(join(jobDir, 'wrapper.pid'), 'utf8').trim();
  } catch {
    return null;
  }
  const match = /^(\d+)(?: (\d+))?$/.exec(text);
  if (!match) return null;
  // An old wrapper wrote only its pid: then take the live process's start time, if any.
  const startTime = match[2] ?? readProcessIdentity(Number(match[1]))?.startTime ?? '0';
  return { pid: Number(match[1]), startTime };
}

/** Read the exit status the wrapper recorded, if it has. */
function readExitCode(jobDir: string): number | null | 'invalid' {
  let text: string;
  try {
    text = readFileSync(join(jobDir, 'exit-code'), 'utf8').trim();
  } catch {
    return null;
  }
  return /^\d+$/.test(text) ? Number(text) : 'invalid';
}

/** An exit status as an observation. Statuses above 128 are the shell's report of a signal. */
export function exitObservation(code: number, source: string): ObservationV1 {
  if (code === 0)
    return { kind: 'found', state: 'succeeded', nativeState: 'exited 0', exitCode: 0, source };
  const signal = code > 128 && code < 128 + 65 ? signalName(code - 128) : null;
  return {
    kind: 'found',
    state: 'failed',
    nativeState: signal ? `killed by ${signal}` : `exited ${code}`,
    exitCode: code,
    signal,
    failureKind: 'application',
    reason: signal ? `killed by ${signal}` : `exit code ${code}`,
    source,
  };
}

function observe(job: BackendJobV1): ObservationV1 {
  const jobDir = String(job.data.jobDir ?? '');
  const identity = identityOf(job.data);
  if (!jobDir || !identity) {
    return {
      kind: 'query-failed',
      source: 'local',
      error: {
        code: 'E_CORRUPT_RECORD',
        message: 'The job has no directory or process identity recorded.',
      },
    };
  }
  if (identity.host !== hostname()) {
    return {
      kind: 'query-failed',
      source: 'local',
      error: {
        code: 'E_TRANSPORT',
        message: `The job runs on host ${identity.host}; query it from there.`,
      },
    };
  }
  const first = readExitCode(jobDir);
  if (first === 'invalid') {
    return {
      kind: 'query-failed',
      source: 'exit-code-file',
      error: {
        code: 'E_CORRUPT_RECORD',
        message: `${join(jobDir, 'exit-code')} does not hold an exit code.`,
      },
    };
  }
  if (first !== null) return exitObservation(first, 'exit-code-file');
  if (isProcessAlive(identity))
    return { kind: 'found', state: 'running', nativeState: 'running', source: 'process' };
  const second = readExitCode(jobDir);
  if (typeof second === 'number') return exitObservation(second, 'exit-code-file');
  return {
    kind: 'absent',
    source: 'process',
    detail:
      identity.bootId !== readBootId()
        ? 'the machine has rebooted since the job started'
        : 'no process and no exit code',
  };
}

/**
 * The built-in backend: runs jobs on this machine, detached from yonder (own session and
 * process group, no terminal), in a private job directory holding the log, the settings
 * file and the exit-code file the wrapper writes. Identity is pid + start time + boot id.
 */
export function createLocalBackend(): BackendV1 {
  return {
    specificationVersion: 'v1',
    id: LOCAL_BACKEND_ID,
    capabilities: {
      resources: [],
      schedulerOptions: false,
      host: 'none',
      recoverSubmit: true,
      logs: true,
      // A wrapper slow to start (a loaded machine) is not taken as never started before this.
      submitGraceSeconds: LOCAL_SUBMIT_GRACE_SECONDS,
    },
    optionsSchema: Type.Object({}, { additionalProperties: false }),

    validateProfile(profile) {
      return profile.host
        ? [{ path: 'host', message: 'the local backend runs on this machine; remove the host' }]
        : [];
    },

    targetKey() {
      return `local:${hostname()}`;
    },

    async probe(profile, context) {
      const workdir = localWorkdir(profile, context.stateDirectory);
      const problems: string[] = [];
      try {
        ensurePrivateDirectory(workdir);
      } catch (error) {
        problems.push(`The work directory ${workdir} cannot be used: ${(error as Error).message}`);
      }
      let shell = '';
      try {
        const result = await context.transport.run(['sh', '-c', 'command -v sh'], {
          timeoutMs: 10_000,
        });
        shell = result.stdout.trim();
      } catch (error) {
        problems.push(`sh cannot be run: ${(error as Error).message}`);
      }
      return {
        ok: problems.length === 0,
        facts: { host: hostname(), workdir, shell, bootId: readBootId() },
        problems,
      };
    },

    async submit(request, context) {
      return submitLocal(request, context);
    },

    async recover(requests, context) {
      const found = new Map<string, SubmitResultV1 | null>();
      for (const request of requests) {
        const jobDir = join(localWorkdir(request.profile, context.stateDirectory), request.id);
        if (!existsSync(jobDir)) {
          found.set(request.id, null);
          continue;
        }
        const recorded = readWrapperPid(jobDir);
        if (recorded === null) {
          // The wrapper writes wrapper.pid as it starts: give a slow start time before saying
          // the job never started (until then, leave it out: it stays `submitting`).
          if (Date.now() - Date.parse(request.createdAt) > LOCAL_SUBMIT_GRACE_SECONDS * 1000)
            found.set(request.id, null);
          continue;
        }
        const { pid, startTime } = recorded;
        const identity = { pid, startTime, bootId: readBootId(), host: hostname() };
        if (readExitCode(jobDir) === null && !isProcessAlive(identity)) {
          // It started, then died without an exit status (and its pid may be someone else's
          // by now): nothing to adopt.
          found.set(request.id, null);
          continue;
        }
        const data: LocalJobData = {
          jobDir,
          log: join(jobDir, 'job.log'),
          pid,
          startTime,
          bootId: readBootId(),
          host: hostname(),
        };
        found.set(request.id, {
          externalId: String(pid),
          state: 'running',
          nativeState: 'running',
          data,
        });
      }
      return found;
    },

    async poll(jobs) {
      return new Map(jobs.map((job) => [job.id, observe(job)] as const));
    },

    async cancel(jobs, _context, options) {
      const outcomes = new Map<string, CancelOutcomeV1>();
      for (const job of jobs) {
        const identity = identityOf(job.data);
        // Re-check identity right before signalling: a recycled pid is never signalled.
        if (!identity || !isProcessAlive(identity)) {
          outcomes.set(job.id, { kind: 'not-running' });
          continue;
        }
        try {
          process.kill(-identity.pid, options.force ? 'SIGKILL' : 'SIGTERM');
          outcomes.set(job.id, { kind: 'sent' });
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          outcomes.set(
            job.id,
            code === 'ESRCH'
              ? { kind: 'not-running' }
              : {
                  kind: 'failed',
                  error: {
                    code: 'E_CANCEL_FAILED',
                    message: `Could not signal process group ${identity.pid}: ${(error as Error).message}`,
                  },
                },
          );
        }
      }
      return outcomes;
    },

    async readLog(job, options): Promise<LogChunkV1> {
      const log = String(job.data.log ?? '');
      if (!log) throw new YonderError('E_LOG_UNAVAILABLE', 'This job has no log recorded.');
      return readLogFile(log, options);
    },
  };
}

function submitLocal(request: SubmitRequestV1, context: BackendContextV1): SubmitResultV1 {
  const cwd = request.cwd ?? process.cwd();
  if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
    throw new YonderError('E_SUBMIT_FAILED', `The job's working directory ${cwd} does not exist.`);
  }
  const workdir = localWorkdir(request.profile, context.stateDirectory);
  ensurePrivateDirectory(workdir);
  const jobDir = join(workdir, request.id);
  createJobDirectory(jobDir);
  try {
    return startLocal(request, jobDir, cwd);
  } catch (error) {
    // Nothing started: leave nothing behind, least of all a file holding the secrets.
    rmSync(jobDir, { recursive: true, force: true });
    throw error;
  }
}

function startLocal(request: SubmitRequestV1, jobDir: string, cwd: string): SubmitResultV1 {
  let argv = [...request.argv];
  if (request.settingsText !== undefined) {
    const settingsPath = join(jobDir, 'settings.json');
    writeExclusive(settingsPath, request.settingsText, 0o600);
    argv = replacePlaceholder(argv, 'settings', settingsPath);
  }
  if (Object.keys(request.secrets).length > 0) {
    writeExclusive(join(jobDir, 'secrets.sh'), renderEnvFile(request.secrets), 0o600);
  }
  const log = join(jobDir, 'job.log');
  const logFd = openExclusive(log, 0o600);
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn('sh', ['-c', JOB_WRAPPER_SCRIPT, 'yonder-job', jobDir, ...argv], {
      cwd,
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: {
        ...process.env,
        ...request.env,
        YONDER_JOB_ID: request.id,
        YONDER_JOB_NAME: request.name,
        YONDER_JOB_DIR: jobDir,
      },
    });
  } finally {
    closeSync(logFd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    throw new YonderError('E_SUBMIT_FAILED', 'The job could not be started: sh did not start.');
  }
  // Read the identity now: the child cannot have been reaped before the event loop runs.
  const identity = readProcessIdentity(pid);
  child.unref();
  child.on('error', () => {});
  const data: LocalJobData = {
    jobDir,
    log,
    pid,
    startTime: identity?.startTime ?? '0',
    bootId: readBootId(),
    host: hostname(),
  };
  return { externalId: String(pid), state: 'running', nativeState: 'running', data };
}
