/**
 * How the workstation backend reads its scripts' answers: a job's recorded process identity,
 * the per-job `<index> WORD …` lines, and what a poll, recovery or cancel line means.
 */
import type { JsonObject } from '../../json/json-value.js';
import type {
  CancelOutcomeV1,
  ObservationV1,
  SubmitResultV1,
} from '../../spec/backend/v1/backend-v1.js';
import { exitObservation } from '../exit-observation.js';

/** A job's process as recorded at submit: pid + start time + boot id (+ host, when known). */
export interface WorkstationIdentity {
  readonly pid: number;
  readonly startTime: string;
  readonly bootId: string;
  /** The node name of the machine it runs on; empty in records that did not keep it. */
  readonly host: string;
}

/** The identity a job's data holds, or null when it holds none (the record is corrupt). */
export function identityOf(data: JsonObject): WorkstationIdentity | null {
  if (typeof data.pid !== 'number' || typeof data.startTime !== 'string') return null;
  return {
    pid: data.pid,
    startTime: data.startTime,
    bootId: String(data.bootId ?? ''),
    host: typeof data.host === 'string' ? data.host : '',
  };
}

/** The job's data for a process found at `jobDir` on the machine whose boot and host are given. */
export function jobData(
  jobDir: string,
  process: { pid: number; startTime: string },
  machine: { boot: string; host: string },
): JsonObject {
  return {
    jobDir,
    log: `${jobDir}/job.log`,
    pid: process.pid,
    startTime: process.startTime,
    bootId: machine.boot,
    host: machine.host,
  };
}

/** The `<index> rest` lines of a script's output, by index. Split on "\n" only. */
export function indexedLines(stdout: string): Map<number, string> {
  const lines = new Map<number, string>();
  for (const line of stdout.split('\n')) {
    const match = /^(\d+) (.*)$/.exec(line);
    if (match) lines.set(Number(match[1]), match[2] as string);
  }
  return lines;
}

/** A poll line (`EXIT <code>`, `RUNNING`, `GONE`) as an observation of the job. */
export function pollObservation(
  line: string | undefined,
  identity: WorkstationIdentity,
  jobDir: string,
  machine: { boot: string; host: string },
  source: string,
): ObservationV1 {
  if (identity.host && machine.host && identity.host !== machine.host) {
    // A ledger shared between machines (a $HOME on NFS): the job is not on this one.
    return {
      kind: 'query-failed',
      source,
      error: {
        code: 'E_TRANSPORT',
        message: `The job runs on host ${identity.host}, not on ${machine.host}; query it from there.`,
      },
    };
  }
  if (line === undefined) {
    return {
      kind: 'query-failed',
      source,
      error: { code: 'E_TRANSPORT', message: 'The host answered nothing for this job.' },
    };
  }
  if (line.startsWith('EXIT ')) {
    const code = line.slice(5);
    return /^\d+$/.test(code)
      ? exitObservation(Number(code), 'exit-code-file')
      : {
          kind: 'query-failed',
          source: 'exit-code-file',
          error: {
            code: 'E_CORRUPT_RECORD',
            message: `${jobDir}/exit-code does not hold an exit code: ${JSON.stringify(code)}`,
          },
        };
  }
  if (line === 'RUNNING' && machine.boot === identity.bootId)
    return { kind: 'found', state: 'running', nativeState: 'running', source: 'process' };
  return {
    kind: 'absent',
    source: 'process',
    detail:
      machine.boot !== identity.bootId
        ? 'the host has rebooted since the job started'
        : 'no process and no exit code',
  };
}

/**
 * A recovery line as what `recover` reports: the job (`FOUND`), certainly none (`DEAD`,
 * `ABANDONED`; or no directory or wrapper.pid once the submit grace has passed), or undefined:
 * not known yet.
 */
export function recoveredSubmit(
  line: string | undefined,
  jobDir: string,
  machine: { boot: string; host: string },
  pastGrace: boolean,
): SubmitResultV1 | null | undefined {
  const [word, pid, start] = (line ?? '').split(' ');
  if (word === 'FOUND' && pid && /^\d+$/.test(pid)) {
    const data = jobData(jobDir, { pid: Number(pid), startTime: start ?? '0' }, machine);
    return { externalId: pid, state: 'running', nativeState: 'running', data };
  }
  // It started, then died without an exit status (its pid may be someone else's now); or it
  // had no job directory, and now can never make one.
  if (word === 'DEAD' || word === 'ABANDONED') return null;
  // NODIR or NOPID: the submit may still be on its way (a wrapper slow to start, a submit
  // script still running) until the grace has passed; then it never started.
  return word && pastGrace ? null : undefined;
}

/** A cancel line (`SENT`, `NOTRUNNING`, `FAILED`) as the outcome for the job. */
export function cancelOutcome(word: string | undefined, pid: number): CancelOutcomeV1 {
  if (word === 'SENT') return { kind: 'sent' };
  if (word === 'NOTRUNNING') return { kind: 'not-running' };
  return {
    kind: 'failed',
    error: { code: 'E_CANCEL_FAILED', message: `Could not signal process group ${pid}.` },
  };
}
