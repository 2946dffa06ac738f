import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ProcessIdentity } from '../spec/job.js';

let bootId: string | undefined;

/** This boot's id (Linux `/proc/sys/kernel/random/boot_id`); `unknown` elsewhere. */
export function readBootId(): string {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootId = 'unknown';
    }
  }
  return bootId;
}

/**
 * Parse `/proc/PID/stat` text: the command name may hold spaces and `)`, so the fields are
 * read after the LAST `) `. Returns the state letter and the start time (field 22).
 */
export function parseProcStat(text: string): { state: string; startTime: string } | null {
  const end = text.lastIndexOf(') ');
  if (end < 0) return null;
  const fields = text
    .slice(end + 2)
    .trim()
    .split(/\s+/);
  const state = fields[0];
  const startTime = fields[19];
  if (!state || !startTime || !/^\d+$/.test(startTime)) return null;
  return { state, startTime };
}

/** The state letter and start time of a live pid, or null when there is no such process. */
export function readProcessStat(pid: number): { state: string; startTime: string } | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** The identity of a process now: pid, start time, boot id and host. Null if it is gone. */
export function readProcessIdentity(pid: number): ProcessIdentity | null {
  const stat = readProcessStat(pid);
  if (!stat) return null;
  return { pid, startTime: stat.startTime, bootId: readBootId(), host: hostname() };
}

/**
 * Whether the process that had this identity is still alive: same boot, same host, same pid,
 * same start time, and not a zombie. A recycled pid has another start time and is not it.
 */
export function isProcessAlive(identity: ProcessIdentity): boolean {
  if (identity.host !== hostname() || identity.bootId !== readBootId()) return false;
  const stat = readProcessStat(identity.pid);
  return (
    stat !== null &&
    stat.startTime === identity.startTime &&
    stat.state !== 'Z' &&
    stat.state !== 'X'
  );
}

/** This process's own identity. */
export function currentProcessIdentity(): ProcessIdentity {
  return (
    readProcessIdentity(process.pid) ?? {
      pid: process.pid,
      startTime: '0',
      bootId: readBootId(),
      host: hostname(),
    }
  );
}
