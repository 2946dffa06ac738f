/**
 * What /proc says about a process: whether it still runs, its process group, and whether a
 * signal is waiting for it. Tests check a cancel's effect with these, not only the record.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { until } from './until.js';

/** The kernel's PF_EXITING flag (include/linux/sched.h): the process is on its way out. */
const PF_EXITING = 0x4;

export interface ProcessState {
  pid: number;
  /** One letter: R, S, D, T, Z (zombie), X (dead), … */
  state: string;
  ppid: number;
  /** Its process group; the local and ssh backends make each job the leader of its own. */
  pgrp: number;
  session: number;
  /** Exiting (PF_EXITING) though not yet a zombie. */
  exiting: boolean;
}

/** `/proc/PID/stat`, parsed; null when there is no such process. */
export function readProcessState(pid: number): ProcessState | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name may hold spaces and parentheses: the fields start after the last ") ".
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return {
    pid,
    state: fields[0] ?? '?',
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    exiting: (Number(fields[6]) & PF_EXITING) !== 0,
  };
}

function running(state: ProcessState | null): state is ProcessState {
  return state !== null && state.state !== 'Z' && state.state !== 'X' && !state.exiting;
}

/** Whether `pid` runs: it exists, is neither a zombie nor dead, and is not exiting. */
export function alive(pid: number): boolean {
  return running(readProcessState(pid));
}

/** Signals whose default is to be ignored (SIGCHLD 17, SIGCONT 18, SIGURG 23, SIGWINCH 28). */
const HARMLESS = [17, 18, 23, 28].reduce((mask, signal) => mask | (1n << BigInt(signal - 1)), 0n);

/**
 * Whether `pid` runs and no signal that could end or stop it is pending (`SigPnd` and `ShdPnd`
 * of /proc/PID/status, ignoring SIGCHLD, SIGCONT, SIGURG and SIGWINCH). Right after a command
 * that must not signal it has returned, a signal it did send is either still pending, being
 * acted on (exiting) or done (gone), so this needs no grace period.
 */
export function unsignalled(pid: number): boolean {
  if (!alive(pid)) return false;
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return false;
  }
  const pending = [...status.matchAll(/^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/gm)].map((match) =>
    BigInt(`0x${match[1]}`),
  );
  return pending.length === 2 && pending.every((mask) => (mask & ~HARMLESS) === 0n);
}

/** The live (not zombie, not exiting) processes of process group `pgid`. */
export function processGroup(pgid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const state = readProcessState(Number(name));
    if (running(state) && state.pgrp === pgid) members.push(state.pid);
  }
  return members;
}

/** Whether nothing of a job is left: its leader `pid` and every process of its group are gone. */
export function jobProcessesGone(pid: number): boolean {
  return !alive(pid) && processGroup(pid).length === 0;
}

/**
 * How long a cancelled job's processes may outlive the record that says `cancelled` (the
 * wrapper records the exit status, then exits; the kernel then tears the group down).
 */
export const JOB_GONE_MS = 10_000;

/**
 * Wait until nothing of the job whose wrapper is `pid` is left (see `jobProcessesGone`): a
 * cancel's effect, checked beside its record.
 */
export function untilJobGone(pid: number, timeoutMs = JOB_GONE_MS): Promise<void> {
  return until(() => jobProcessesGone(pid), timeoutMs, `the processes of job ${pid} to be gone`);
}

/**
 * The live processes (not zombies) whose environment carries a workstation job's marker,
 * `YONDER_JOB_ID=<id>`: every process the job started, wherever it moved (`setsid` included).
 */
export function markedProcesses(id: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let environ: string[];
    try {
      environ = readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
    } catch {
      continue;
    }
    const state = readProcessState(Number(name))?.state;
    if (environ.includes(`YONDER_JOB_ID=${id}`) && state !== 'Z' && state !== 'X')
      found.push(Number(name));
  }
  return found;
}
