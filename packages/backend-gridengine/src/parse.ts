/** Readers of Grid Engine's answers: `qstat -xml`, `qacct -j`, `qstat -j -xml`, `qsub -terse`, the version, and what each says about a job. */
import type { FoundObservationV1 } from '@yonder/core';
import { exitObservation, signalName } from '@yonder/core/backend-kit';

/** One `<job_list>` of `qstat -xml`: a job, or one task of an array job. */
export interface QstatRow {
  readonly jobId: string;
  readonly name: string;
  readonly owner: string;
  /** Grid Engine's state letters: `qw`, `hqw`, `r`, `t`, `dr`, `Eqw`, `s`… */
  readonly state: string;
  /** The start (running jobs) as Grid Engine printed it, in the qmaster's local time. */
  readonly startTime: string | null;
  readonly tasks: string | null;
}

/** The XML entities qstat writes in text. */
function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (entity, name: string) => {
    if (name === 'lt') return '<';
    if (name === 'gt') return '>';
    if (name === 'amp') return '&';
    if (name === 'quot') return '"';
    if (name === 'apos') return "'";
    const code = name.startsWith('#x') ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
  });
}

/** The text of the first `<tag>` element in `xml`, or null. */
function element(xml: string, tag: string): string | null {
  const match = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return match ? unescapeXml(match[1] as string) : null;
}

/**
 * The jobs of `qstat -u USER -xml` (running ones under `<queue_info>`, pending, held and Eqw
 * ones under `<job_info>`, all as `<job_list>`).
 * @throws Error when the text is not qstat's XML answer.
 */
export function parseQstatXml(xml: string): QstatRow[] {
  if (!/<job_info[\s>]/.test(xml)) throw new Error('not a qstat -xml answer (no <job_info>)');
  const rows: QstatRow[] = [];
  for (const match of xml.matchAll(/<job_list[^>]*>([\s\S]*?)<\/job_list>/g)) {
    const body = match[1] as string;
    const jobId = element(body, 'JB_job_number');
    if (jobId === null) continue;
    rows.push({
      jobId,
      name: element(body, 'JB_name') ?? '',
      owner: element(body, 'JB_owner') ?? '',
      state: element(body, 'state') ?? '',
      startTime: element(body, 'JAT_start_time'),
      tasks: element(body, 'tasks'),
    });
  }
  return rows;
}

/** The reasons `qstat -j ID -xml` gives for a job in error state (its `QIM_message`s). */
export function parseErrorReasons(xml: string): string[] {
  return [...xml.matchAll(/<QIM_message>([^<]*)<\/QIM_message>/g)].map((match) =>
    // "12/07/2026 16:33:59 [0:9722]: error: can't chdir to …": the message without its stamp.
    unescapeXml(match[1] as string).replace(/^[\d/]+ [\d:]+ \[[\d:]+\]: (error: )?/, ''),
  );
}

/** One record of `qacct -j`. */
export interface QacctRecord {
  readonly jobId: string;
  readonly name: string;
  readonly owner: string;
  readonly taskId: string;
  /** `failed`'s number and its text (`37`, `qmaster enforced h_rt, h_cpu, or h_vmem limit`). */
  readonly failed: number;
  readonly failedText: string;
  /** `exit_status`: the job script's exit status, 128+N when a signal N killed it. */
  readonly exitStatus: number;
  readonly startTime: string | null;
  readonly endTime: string | null;
}

/**
 * The records of `qacct -j ID` (a job has one per task, and more than one when it was
 * rescheduled: the last is the one that counts).
 */
export function parseQacct(text: string): QacctRecord[] {
  const records: QacctRecord[] = [];
  for (const block of text.split(/^={10,}\s*$/m)) {
    const fields = new Map<string, string>();
    for (const line of block.split('\n')) {
      const match = /^(\w+)\s+(.*?)\s*$/.exec(line);
      if (match && !fields.has(match[1] as string))
        fields.set(match[1] as string, match[2] as string);
    }
    const jobId = fields.get('jobnumber');
    const failed = /^(\d+)\s*(?::\s*(.*))?$/.exec(fields.get('failed') ?? '');
    const exit = /^(\d+)/.exec(fields.get('exit_status') ?? '');
    if (!jobId || !failed || !exit) continue;
    records.push({
      jobId,
      name: fields.get('jobname') ?? '',
      owner: fields.get('owner') ?? '',
      taskId: fields.get('taskid') ?? 'undefined',
      failed: Number(failed[1]),
      failedText: failed[2] ?? '',
      exitStatus: Number(exit[1]),
      startTime: fields.get('start_time') ?? null,
      endTime: fields.get('end_time') ?? null,
    });
  }
  return records;
}

/** The job id `qsub -terse` printed (`12`, or `12.1-3:1` for an array), or null. */
export function parseQsubId(stdout: string): string | null {
  const match = /^(\d+)(?:\.\S*)?\s*$/m.exec(stdout);
  return match ? (match[1] as string) : null;
}

/**
 * Whether a command's complaint says the qmaster could not be reached or did not answer (so
 * nothing can be said of the job), not that it refused something.
 */
export function qmasterUnreachable(text: string): boolean {
  return /commlib error|unable to (send message to|contact) qmaster|failed receiving gdi request|can't unpack gdi request/i.test(
    text,
  );
}

/** The version in the first line of `qstat -help` (`SGE 8.1.9`, `OGS/GE 2011.11p1`, `GE 6.2u5`). */
export function parseGridEngineVersion(text: string): string | null {
  const line = text.split('\n')[0]?.trim() ?? '';
  return /^(?:SGE|OGS\/GE|GE|UGE|Univa Grid Engine|Altair Grid Engine)\s+\S+/.test(line)
    ? line
    : null;
}

/** A pending or live job's observation from its qstat state letters. */
export function qstatObservation(row: QstatRow): FoundObservationV1 {
  const state = row.state;
  const base = { kind: 'found', nativeState: state, source: 'qstat' } as const;
  if (/[rtRsSTd]/.test(state) && !/q/.test(state))
    return {
      ...base,
      state: 'running',
      reason: /[sST]/.test(state) ? 'suspended' : /d/.test(state) ? 'being deleted' : null,
    };
  if (/h/.test(state)) return { ...base, state: 'pending', reason: 'held' };
  return { ...base, state: 'pending', reason: null };
}

/** Whether qstat shows the job in error state (`Eqw`): Grid Engine will not run it as it is. */
export function inErrorState(row: QstatRow): boolean {
  return row.state.includes('E');
}

/**
 * A finished job's observation from its accounting record: `failed` says whose failure it was
 * (0: the job ran and its script exited with `exit_status`; 37: a limit such as h_rt; 100: it
 * was killed, by a signal from inside or outside, or by qdel; 1–36: Grid Engine could not start
 * it), `exit_status` how it ended (128+N: signal N).
 */
export function qacctObservation(record: QacctRecord): FoundObservationV1 {
  const base = {
    kind: 'found',
    source: 'qacct',
    nativeState: `failed ${record.failed}${record.failedText ? ` : ${record.failedText}` : ''}, exit_status ${record.exitStatus}`,
  } as const;
  // The job ran: its end as its exit status says. failed 0 also says nothing killed it.
  if (record.failed === 0 || record.failed === 100) {
    const exited = exitObservation(record.exitStatus, 'qacct') as FoundObservationV1;
    // failed 100 ("assumedly after job"): Grid Engine saw the job end by a signal (a qdel, the
    // kernel), so a status above 128 names it. Without that, 137 is an exit code that may or may
    // not have been a kill, and the observation says no more.
    const signal =
      record.failed === 100 && record.exitStatus > 128 && record.exitStatus < 128 + 65
        ? signalName(record.exitStatus - 128)
        : null;
    return {
      ...exited,
      nativeState: base.nativeState,
      ...(signal ? { signal, reason: `killed by ${signal}` } : {}),
      ...(record.failed === 0 ? { endedOnItsOwn: true } : {}),
    };
  }
  if (record.failed === 37)
    return {
      ...base,
      state: 'failed',
      exitCode: null,
      signal: record.exitStatus > 128 ? signalName(record.exitStatus - 128) : null,
      reason: 'timeout',
      failureKind: 'application',
      endedOnItsOwn: true,
    };
  // Grid Engine could not set the job up (its directory, its output files, its user…).
  return {
    ...base,
    state: 'failed',
    exitCode: null,
    signal: null,
    reason: record.failedText || `Grid Engine failure ${record.failed}`,
    failureKind: record.failed <= 36 ? 'submission' : 'infrastructure',
  };
}

/**
 * A time qacct printed (`Mon Dec  7 16:33:35 2026`, in its local time zone) as ISO, read in
 * UTC (the backend runs qacct with TZ=UTC); undefined when it is not one. qacct prints whole
 * seconds, and the manager takes such an end as any moment of its second (a cancel that
 * reached the job in that second may have ended it).
 */
export function qacctTime(text: string | null | undefined): string | undefined {
  const match = /^\w{3} (\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})$/.exec(text?.trim() ?? '');
  if (!match) return undefined;
  const month = 'JanFebMarAprMayJunJulAugSepOctNovDec'.indexOf(match[1] as string) / 3;
  if (month < 0 || !Number.isInteger(month)) return undefined;
  const ms = Date.UTC(
    Number(match[6]),
    month,
    Number(match[2]),
    Number(match[3]),
    Number(match[4]),
    Number(match[5]),
  );
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
