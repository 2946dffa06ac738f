/**
 * How the workstation backend reads its scripts' answers: a job's recorded process identity,
 * the per-job `<index> WORD …` lines, and what a poll, recovery or cancel line means.
 */
import type { JsonObject } from '../../json/json-value.js';
import { epochToIso } from '../../remote/remote-scripts.js';
import type {
  CancelOutcomeV1,
  ObservationV1,
  SubmitResultV1,
} from '../../spec/backend/v1/backend-v1.js';
import type { ContainerImage } from '../../spec/container.js';
import { exitObservation } from '../exit-observation.js';

/** A job's process as recorded at submit: pid + start time + boot id (+ host, when known). */
export interface WorkstationIdentity {
  readonly pid: number;
  readonly startTime: string;
  readonly bootId: string;
  /** The node name of the machine it runs on; empty in records that did not keep it. */
  readonly host: string;
}

/** The largest pid Linux hands out (PID_MAX_LIMIT, 2^22). */
const MAX_PID = 4_194_304;

/**
 * The identity a job's data holds, or null when it holds none that can be a job's: a pid that
 * is not a whole number above 1 (pid 1 is init; 0 and -1 would make `kill` reach every process
 * of the group or of the user) or a start time that is not a number is a corrupt record, and
 * nothing is ever signalled for it.
 */
export function identityOf(data: JsonObject): WorkstationIdentity | null {
  const pid = data.pid;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 1 || pid > MAX_PID) return null;
  if (typeof data.startTime !== 'string' || !/^\d{1,20}$/.test(data.startTime)) return null;
  return {
    pid,
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

/** The times a poll line carries, as the observation's fields. */
function times(
  started: string | undefined,
  ended?: string,
): { startedAt?: string; endedAt?: string } {
  const startedAt = epochToIso(started);
  const endedAt = epochToIso(ended);
  return {
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(endedAt === undefined ? {} : { endedAt }),
  };
}

/** Pids as words for people: `1 process of the job … (pid 12)`, `2 processes … (pid 12, 13)`. */
function processes(words: readonly string[], what: string): string {
  const pids = words.filter((word) => /^\d+$/.test(word));
  return `${pids.length} process${pids.length === 1 ? '' : 'es'} of the job ${what} (pid ${pids.join(', ')})`;
}

/**
 * Processes of the job that outlived a cancel's SIGKILL and still run: the job is not over, and
 * this stays on the record as its error (the state as it was) until they end: never `cancelled`.
 */
function survivedKill(pids: readonly string[]): ObservationV1 & { kind: 'query-failed' } {
  return {
    kind: 'query-failed',
    source: 'process',
    error: {
      code: 'E_CANCEL_FAILED',
      message: `${processes(pids, 'survived SIGKILL')}: they are still running (a process in uninterruptible sleep, or frozen); the job is not over until they end.`,
    },
  };
}

/**
 * A poll line (`EXIT <code> <started> <ended>`, `RUNNING <started>`, `STOPPED <started>`,
 * `LEFT <code or -> <survived> <count> <pid>…`, `GONE [untrusted]`) as an observation of the job.
 */
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
  const [word, ...rest] = line.split(' ');
  if (word === 'EXIT') {
    const [code = '', started, ended] = rest;
    return /^\d+$/.test(code)
      ? { ...exitObservation(Number(code), 'exit-code-file'), ...times(started, ended) }
      : {
          kind: 'query-failed',
          source: 'exit-code-file',
          error: {
            code: 'E_CORRUPT_RECORD',
            message: `${jobDir}/exit-code does not hold an exit code: ${JSON.stringify(code)}`,
          },
        };
  }
  if (word === 'LEFT') {
    // A cancel was asked for and the job's wrapper is done, but processes of the job still run:
    // not over, so the cancel goes on (TERM, then KILL) until nothing of it is left.
    const [code = '-', survived, , ...pids] = rest;
    if (survived === '1') return survivedKill(pids);
    const ended = /^\d+$/.test(code) ? `ended (exit ${code})` : 'wrapper gone';
    return {
      kind: 'found',
      state: 'running',
      nativeState: `${ended}, processes left`,
      reason: processes(pids, 'still running'),
      source: 'process',
    };
  }
  if (word === 'JOBSTOPPED' && machine.boot === identity.bootId) {
    const [started, pid] = rest;
    return {
      kind: 'found',
      state: 'running',
      nativeState: 'stopped',
      reason: `the job's process (pid ${pid}) is stopped; it goes on once continued (kill -CONT ${pid})`,
      source: 'process',
      ...times(started),
    };
  }
  if ((word === 'RUNNING' || word === 'STOPPED') && machine.boot === identity.bootId) {
    const [started, ...survivors] = rest;
    if (survivors.length > 0) return survivedKill(survivors);
    return {
      kind: 'found',
      state: 'running',
      nativeState: word === 'STOPPED' ? 'stopped' : 'running',
      ...(word === 'STOPPED'
        ? {
            reason: `the job's wrapper (pid ${identity.pid}) is stopped; its exit is recorded once it is continued (kill -CONT ${identity.pid}), which the next poll does when the job has ended`,
          }
        : {}),
      source: 'process',
      ...times(started),
    };
  }
  return {
    kind: 'absent',
    source: 'process',
    detail:
      machine.boot !== identity.bootId
        ? 'the host has rebooted since the job started'
        : rest[0] === 'untrusted'
          ? `no process, and ${jobDir} is not a private directory of yours (it was replaced or opened to others): nothing in it is believed`
          : 'no process and no exit code',
  };
}

/**
 * The image of a job in a container, from the `<id> <digest>` its submit printed (or kept in
 * the job directory for a recovery: `-` for none).
 */
export function imageOf(words: string): ContainerImage | undefined {
  const [id, digest] = words.split(' ');
  return id && id !== '-' ? { id, digest: digest && digest !== '-' ? digest : null } : undefined;
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
  const [word, pid, start, imageId, imageDigest] = (line ?? '').split(' ');
  if (word === 'FOUND' && pid && /^\d+$/.test(pid)) {
    const data = jobData(jobDir, { pid: Number(pid), startTime: start ?? '0' }, machine);
    const image = imageOf(`${imageId ?? ''} ${imageDigest ?? ''}`);
    return {
      externalId: pid,
      state: 'running',
      nativeState: 'running',
      data,
      ...(image ? { containerImage: image } : {}),
    };
  }
  // It started, then died without an exit status (its pid may be someone else's now); or it
  // had no job directory, and now can never make one; or the directory there is not one a
  // submit of the user's made (that is private from the start).
  if (word === 'DEAD' || word === 'ABANDONED' || word === 'UNTRUSTED') return null;
  // NODIR or NOPID: the submit may still be on its way (a wrapper slow to start, a submit
  // script still running) until the grace has passed; then it never started.
  return word && pastGrace ? null : undefined;
}

/**
 * A cancel line (`SENT`, `NOTRUNNING`, `FAILED`, `SURVIVED <count> <pid>…`) as the outcome for
 * the job. Processes that outlived SIGKILL make the cancel a failure that names them.
 */
export function cancelOutcome(line: string | undefined, pid: number): CancelOutcomeV1 {
  const [word, , ...pids] = (line ?? '').split(' ');
  if (word === 'SENT') return { kind: 'sent' };
  if (word === 'NOTRUNNING') return { kind: 'not-running' };
  if (word === 'SURVIVED') return { kind: 'failed', error: survivedKill(pids).error };
  return {
    kind: 'failed',
    error: { code: 'E_CANCEL_FAILED', message: `Could not signal process group ${pid}.` },
  };
}
