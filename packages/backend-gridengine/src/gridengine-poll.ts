/** Poll: one qstat for every job of the target; then qacct and the wrappers' exit codes (one command) for the jobs it no longer lists, and the reason of jobs in error state. */
import {
  type BackendContextV1,
  type BackendJobV1,
  type FoundObservationV1,
  type ObservationV1,
  type RunResultV1,
  toYonderError,
} from '@yonder/core';
import { chunks, commandFailure, epochToIso, exitObservation } from '@yonder/core/backend-kit';
import { QUERY_CHUNK, QUERY_TIMEOUT_MS } from './gridengine-command.js';
import {
  inErrorState,
  parseErrorReasons,
  parseQacct,
  parseQstatXml,
  type QacctRecord,
  type QstatRow,
  qacctObservation,
  qacctTime,
  qstatObservation,
} from './parse.js';
import { QSTAT_SCRIPT, REFUSE_SCRIPT, RESOLVE_SCRIPT } from './scripts.js';

/** What the wrapper recorded in a job directory once the job ended. */
export interface WrapperEnd {
  readonly exitCode: number;
  readonly startedAt?: string;
  readonly endedAt?: string;
}

/** What the poll's second look found about one job. */
export interface GridEngineEvidence {
  /** qacct's records of the job's id (empty: none), or why qacct's answer does not count. */
  readonly accounting: readonly QacctRecord[] | { readonly error: string };
  /** The wrapper's end, if it recorded one. */
  readonly end?: WrapperEnd | undefined;
}

/**
 * Observe every given job (all on one target): one `qstat -u <user> -xml` for all of them.
 * A job listed live is reported from it (pending, held, running); one in error state (Eqw)
 * is refused with Grid Engine's reason and taken out of the queue. The jobs qstat no longer
 * lists are settled by qacct and their wrappers' exit codes, in one more command per chunk.
 */
export async function gridEnginePoll(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1,
): Promise<Map<string, ObservationV1>> {
  const out = new Map<string, ObservationV1>();
  if (jobs.length === 0) return out;
  let rows: QstatRow[];
  try {
    const result = await context.transport.runScript(QSTAT_SCRIPT, [], {
      timeoutMs: QUERY_TIMEOUT_MS,
    });
    if (result.exitCode !== 0) throw new Error(`qstat failed: ${commandFailure(result)}`);
    rows = parseQstatXml(result.stdout);
  } catch (error) {
    const failure = toYonderError(error, 'E_SCHEDULER_UNAVAILABLE').toJSON();
    for (const job of jobs)
      out.set(job.id, { kind: 'query-failed', source: 'qstat', error: failure });
    return out;
  }
  const listed = new Map<string, QstatRow>();
  for (const row of rows) if (!listed.has(row.jobId)) listed.set(row.jobId, row);
  const gone: BackendJobV1[] = [];
  const refused: BackendJobV1[] = [];
  for (const job of jobs) {
    const row = job.externalId === null ? undefined : listed.get(job.externalId);
    if (job.externalId === null)
      out.set(job.id, { kind: 'absent', source: 'qstat', detail: 'the job has no Grid Engine id' });
    else if (row && row.name === String(job.data.jobName ?? '')) {
      if (inErrorState(row)) refused.push(job);
      else out.set(job.id, withStartTime(qstatObservation(row), row));
    } else gone.push(job);
  }
  if (refused.length > 0)
    for (const [id, observation] of await refuse(refused, listed, context))
      out.set(id, observation);
  for (const chunk of chunks(gone, QUERY_CHUNK)) {
    const evidence = await gatherEvidence(chunk, context);
    for (const job of chunk) out.set(job.id, reconcile(job, evidence.get(job.id)));
  }
  return out;
}

/** A running job's start as qstat printed it (the qmaster's clock; the prelude sets TZ=UTC). */
function withStartTime(observation: FoundObservationV1, row: QstatRow): FoundObservationV1 {
  if (observation.state !== 'running' || !row.startTime) return observation;
  const time = Date.parse(`${row.startTime}Z`);
  return Number.isNaN(time)
    ? observation
    : { ...observation, startedAt: new Date(time).toISOString() };
}

/**
 * Jobs in error state will not run until someone clears them: each is reported failed, as a
 * refusal (the submitter's: a working directory or output file that cannot be used), with
 * Grid Engine's reason, and deleted from the queue so nothing of it is left waiting.
 */
async function refuse(
  jobs: readonly BackendJobV1[],
  listed: ReadonlyMap<string, QstatRow>,
  context: BackendContextV1,
): Promise<Map<string, ObservationV1>> {
  const out = new Map<string, ObservationV1>();
  let result: RunResultV1;
  try {
    result = await context.transport.runScript(
      REFUSE_SCRIPT,
      jobs.map((job) => job.externalId as string),
      { timeoutMs: QUERY_TIMEOUT_MS },
    );
  } catch (error) {
    const failure = toYonderError(error, 'E_TRANSPORT').toJSON();
    for (const job of jobs)
      out.set(job.id, { kind: 'query-failed', source: 'qstat -j', error: failure });
    return out;
  }
  const text = new Map<string, string>();
  for (const line of result.stdout.split('\n')) {
    const match = /^REASON (\d+) (.*)$/s.exec(line);
    if (match) text.set(match[1] as string, `${text.get(match[1] as string) ?? ''}${match[2]}\n`);
  }
  for (const job of jobs) {
    const reasons = parseErrorReasons(text.get(job.externalId as string) ?? '');
    out.set(job.id, {
      kind: 'found',
      state: 'failed',
      nativeState: listed.get(job.externalId as string)?.state ?? 'Eqw',
      source: 'qstat',
      exitCode: null,
      signal: null,
      reason: `Grid Engine cannot start the job: ${reasons.join('; ') || 'it is in error state'}`,
      failureKind: 'submission',
      endedOnItsOwn: true,
    });
  }
  return out;
}

/** qacct's records and the wrappers' ends of jobs qstat no longer lists, in one command. */
async function gatherEvidence(
  jobs: readonly BackendJobV1[],
  context: BackendContextV1,
): Promise<Map<string, GridEngineEvidence>> {
  const out = new Map<string, GridEngineEvidence>();
  const ids = jobs.map((job) => job.externalId as string);
  const dirs = jobs
    .map((job) => String(job.data.jobDir ?? ''))
    .filter((dir) => dir.startsWith('/'));
  let result: RunResultV1;
  try {
    result = await context.transport.runScript(
      RESOLVE_SCRIPT,
      [String(ids.length), ...ids, ...dirs],
      {
        timeoutMs: QUERY_TIMEOUT_MS,
      },
    );
  } catch (error) {
    const message = toYonderError(error, 'E_TRANSPORT').message;
    for (const job of jobs) out.set(job.id, { accounting: { error: message } });
    return out;
  }
  const answer = parseResolveOutput(result.stdout);
  for (const job of jobs) {
    const id = job.externalId as string;
    const qacct = answer.qacct.get(id);
    const accounting: GridEngineEvidence['accounting'] = !qacct
      ? { error: `the poll stopped before qacct answered for job ${id}: ${commandFailure(result)}` }
      : qacct.status === 0
        ? parseQacct(qacct.out)
        : new RegExp(`job id ${id} not found`).test(qacct.err)
          ? []
          : {
              error: `qacct -j ${id} failed: ${qacct.err.trim() || qacct.out.trim() || `exit status ${qacct.status}`}`,
            };
    out.set(job.id, { accounting, end: answer.ends.get(String(job.data.jobDir ?? '')) });
  }
  return out;
}

/** RESOLVE_SCRIPT's answer: qacct's per id, the wrappers' ends per job directory. */
export function parseResolveOutput(stdout: string): {
  user: string | null;
  qacct: Map<string, { status: number; out: string; err: string }>;
  ends: Map<string, WrapperEnd>;
} {
  const qacct = new Map<string, { status: number; out: string; err: string }>();
  const ends = new Map<string, WrapperEnd>();
  let user: string | null = null;
  for (const line of stdout.split('\n')) {
    if (line.startsWith('USER ') && user === null) {
      user = line.slice(5);
      continue;
    }
    const head = /^(QACCT|OUT|ERR) (\S+) ?(.*)$/s.exec(line);
    if (head) {
      const id = head[2] as string;
      if (head[1] === 'QACCT') qacct.set(id, { status: Number(head[3]), out: '', err: '' });
      else {
        const entry = qacct.get(id);
        if (entry && head[1] === 'OUT') entry.out += `${head[3]}\n`;
        else if (entry) entry.err += `${head[3]}\n`;
      }
      continue;
    }
    if (!line.startsWith('EXIT ')) continue;
    // `<dir>\t<code>\t<started>\t<ended>`: split on the last three tabs (a directory may hold one).
    const fields = line.slice(5).split('\t');
    if (fields.length < 4) continue;
    const [code, started, ended] = fields.slice(-3) as [string, string, string];
    if (!/^\d+$/.test(code)) continue;
    const startedAt = epochToIso(started);
    const endedAt = epochToIso(ended);
    ends.set(fields.slice(0, -3).join('\t'), {
      exitCode: Number(code),
      ...(startedAt === undefined ? {} : { startedAt }),
      ...(endedAt === undefined ? {} : { endedAt }),
    });
  }
  return { user, qacct, ends };
}

/**
 * One job qstat no longer lists. Its accounting record (the last of its name: a rescheduled
 * job has several) says how it ended, with the exact exit status the wrapper recorded when
 * there is one; with no record yet, the wrapper's exit code settles it (a job missing from both
 * sources is not taken as finished while its exit-code file says it did). A job no source
 * vouches for is absent: the manager's absence rule (time and healthy misses) applies. A qacct
 * that failed changes nothing, unless the wrapper's exit code already says how the job ended.
 */
export function reconcile(
  job: BackendJobV1,
  evidence: GridEngineEvidence | undefined,
): ObservationV1 {
  if (!evidence)
    return {
      kind: 'query-failed',
      source: 'qacct',
      error: { code: 'E_TRANSPORT', message: 'the poll gave no answer for this job' },
    };
  const name = String(job.data.jobName ?? '');
  const { end } = evidence;
  const times = (observation: FoundObservationV1, record?: QacctRecord): FoundObservationV1 => {
    const startedAt = end?.startedAt ?? qacctTime(record?.startTime);
    const endedAt = end?.endedAt ?? qacctTime(record?.endTime);
    return {
      ...observation,
      ...(startedAt === undefined ? {} : { startedAt }),
      ...(endedAt === undefined ? {} : { endedAt }),
    };
  };
  if ('error' in evidence.accounting) {
    if (end) return times(exitObservation(end.exitCode, 'exit-code-file') as FoundObservationV1);
    return {
      kind: 'query-failed',
      source: 'qacct',
      error: { code: 'E_SCHEDULER_UNAVAILABLE', message: evidence.accounting.error },
    };
  }
  const records = evidence.accounting.filter((record) => record.name === name);
  const record = records[records.length - 1];
  if (record) {
    const observed = qacctObservation(record);
    // The wrapper's exit status is the job's own, exact (Grid Engine records the job script's,
    // and a kill that came after the job's end as failed 100): it wins, but for a time limit
    // Grid Engine enforced. Grid Engine's failed 0 also says nothing killed the job.
    if (end && record.failed !== 37)
      return times(
        {
          ...(exitObservation(end.exitCode, 'exit-code-file') as FoundObservationV1),
          nativeState: observed.nativeState,
          ...(record.failed === 0 ? { endedOnItsOwn: true } : {}),
        },
        record,
      );
    return times(observed, record);
  }
  if (end) return times(exitObservation(end.exitCode, 'exit-code-file') as FoundObservationV1);
  return {
    kind: 'absent',
    source: 'qacct',
    detail:
      evidence.accounting.length > 0
        ? `Grid Engine job ${job.externalId} is named ${evidence.accounting[0]?.name}, not ${name}: not this job`
        : 'neither qstat nor qacct knows the job, and its wrapper recorded no end',
  };
}
