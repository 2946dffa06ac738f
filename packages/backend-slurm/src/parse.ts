import type { FailureKind, FoundObservationV1 } from '@yonder/core';
import { normaliseState, signalName } from '@yonder/core/backend-kit';

/** One line of `squeue --format=%A|%i|%T|%j|%k|%r`. */
export interface SqueueRow {
  jobId: string;
  displayId: string;
  state: string;
  name: string;
  comment: string;
  reason: string;
}

/** One line of `sacct --parsable2 --format=JobIDRaw,JobID,JobName,State,ExitCode,Comment`. */
export interface SacctRow {
  jobId: string;
  displayId: string;
  name: string;
  state: string;
  exitCode: string;
  comment: string;
}

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line.trim() !== '');
}

/** Parse squeue rows leniently: lines that do not have the shape are skipped, never thrown on. */
export function parseSqueue(text: string): SqueueRow[] {
  const rows: SqueueRow[] = [];
  for (const line of lines(text)) {
    const parts = line.split('|');
    if (parts.length < 6) continue;
    const [jobId, displayId, state, name] = parts as [string, string, string, string];
    if (!/^\d+$/.test(jobId)) continue;
    // The reason is the last field; a comment (set by anyone) may itself hold "|".
    const comment = parts.slice(4, -1).join('|');
    rows.push({
      jobId,
      displayId,
      state,
      name,
      comment: comment === '(null)' ? '' : comment,
      reason: parts.at(-1) as string,
    });
  }
  return rows;
}

export function parseSacct(text: string): SacctRow[] {
  const rows: SacctRow[] = [];
  for (const line of lines(text)) {
    const parts = line.split('|');
    if (parts.length < 6) continue;
    const [jobId, displayId, name, state, exitCode, ...comment] = parts as [
      string,
      string,
      string,
      string,
      string,
      ...string[],
    ];
    if (!/^\d+$/.test(jobId)) continue;
    rows.push({ jobId, displayId, name, state, exitCode, comment: comment.join('|') });
  }
  return rows;
}

/** `sbatch --version`: `slurm 23.11.4` or Debian's `slurm-wlm 22.05.8`. */
export function parseSlurmVersion(
  text: string,
): { major: number; minor: number; patch: number; text: string } | null {
  const match = /^(?:slurm|slurm-wlm)\s+(\d+)\.(\d+)(?:\.(\d+))?/im.exec(text.trim());
  if (!match) return null;
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3] ?? 0),
    text: `${match[1]}.${match[2]}${match[3] === undefined ? '' : `.${match[3]}`}`,
  };
}

/** A value from `scontrol show config` (`Key = value` lines). */
export function parseConfigValue(text: string, key: string): string | null {
  for (const line of lines(text)) {
    const at = line.indexOf('=');
    if (at < 0) continue;
    if (line.slice(0, at).trim().toLowerCase() === key.toLowerCase())
      return line.slice(at + 1).trim();
  }
  return null;
}

/** `MinJobAge = 30 sec` → 30. */
export function parseMinJobAge(text: string): number | null {
  const value = parseConfigValue(text, 'MinJobAge');
  const match = value ? /^(\d+)/.exec(value) : null;
  return match ? Number(match[1]) : null;
}

/**
 * The id line of `sbatch --parsable`: `123` or `123;cluster`. Informational lines may come
 * first: the last line that has the shape wins.
 */
export function parseSbatchId(stdout: string): { id: string; cluster: string | null } | null {
  const found = lines(stdout)
    .map((line) => /^(\d+)(?:;(\S+))?$/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null);
  const last = found.at(-1);
  return last ? { id: last[1] as string, cluster: last[2] ?? null } : null;
}

/** The reason sbatch gave for refusing a job. */
export function sbatchFailure(stderr: string): string {
  const specific = /Batch job submission failed:\s*(.*)$/m.exec(stderr);
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const detail = lines.filter((line) => !/sleeping and retrying|retrying$/.test(line)).join('; ');
  return (
    specific ? `${detail || specific[1]}` : detail || 'sbatch failed without a message'
  ).slice(-1200);
}

/** Whether an sbatch failure is transient (worth a retry after looking the job up). */
export function isTransientSbatchFailure(stderr: string): boolean {
  return /Socket timed out|Unable to contact slurm controller|temporarily unable|temporarily disabled|Rate limit exceeded|try again|Requested nodes are busy/i.test(
    stderr,
  );
}

/** sacct's `ExitCode` (`code:signal`). */
export function parseExitCode(text: string): { exitCode: number | null; signal: string | null } {
  const match = /^(\d+):(\d+)$/.exec(text.trim());
  if (!match) return { exitCode: null, signal: null };
  const signal = Number(match[2]);
  return {
    exitCode: Number(match[1]),
    signal: signal > 0 ? signalName(signal) : null,
  };
}

/** A sacct or squeue state, with sacct's exit code, as an observation. */
export function slurmObservation(
  state: string,
  source: 'squeue' | 'sacct',
  details: { exitCode?: string; reason?: string } = {},
): FoundObservationV1 {
  const normalised = normaliseState(state, 'slurm');
  const parsed = parseExitCode(details.exitCode ?? '');
  let signal = parsed.signal;
  // Only a job that ran to its end has an exit code: not one killed by a signal, timed out or cancelled.
  const exitCode =
    normalised.state === 'succeeded'
      ? 0
      : signal !== null || normalised.state === 'cancelled' || normalised.reason === 'timeout'
        ? null
        : parsed.exitCode;
  let failureKind: FailureKind | null = normalised.failureKind;
  let reason = normalised.reason;
  if (normalised.state === 'failed') {
    if (details.exitCode?.trim() === '0:53') {
      // slurmd could not set up the job's I/O (e.g. its output directory is gone): not the job's fault.
      failureKind = 'infrastructure';
      reason = 'job launch failed (I/O setup)';
      signal = null;
    }
    if (reason === null)
      reason = signal ? `killed by ${signal}` : exitCode !== null ? `exit code ${exitCode}` : null;
  }
  if (normalised.state === 'pending' && details.reason && details.reason !== 'None')
    reason = details.reason;
  return {
    kind: 'found',
    state: normalised.state,
    nativeState: state,
    exitCode,
    signal,
    reason,
    failureKind,
    source,
  };
}
