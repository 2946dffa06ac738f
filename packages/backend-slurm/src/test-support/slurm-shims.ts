/** Fault injection for the tests against the real Slurm: a `binDir` of small scripts that run the real commands, or answer the way sick ones do, and log every call. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shQuote } from '@yonder/core/backend-kit';
import { SLURM_COMMANDS } from '../scripts.js';

export type SlurmCommandName = (typeof SLURM_COMMANDS)[number];

/**
 * How a shim answers instead of the real command: shell text run by the shim with `$real`
 * (the real command's path) and `"$@"` (its arguments); its exit status is the shim's.
 */
export const behaviours = {
  /** Exit 0 with no rows (a sick slurmdbd, or squeue that lost its job table). */
  noRows: 'exit 0',
  /** sacct's rows with every state RUNNING (stale or runaway accounting records). */
  staleRunning: `"$real" "$@" | awk -F'|' 'BEGIN { OFS = "|" } NF >= 4 { $4 = "RUNNING" } { print }'`,
  /** What sacct 22.05/23.02 print when slurmdbd cannot be reached, with exit 0 and no rows. */
  databaseError:
    "echo 'sacct: error: Problem talking to the database: Connection refused' >&2; exit 0",
  /** What sacct 22.05 prints, with exit 1, while slurmdbd is down. */
  databaseDown: [
    "echo 'sacct: error: slurm_persist_conn_open_without_init: failed to open persistent connection to host:localhost:6819: Connection refused' >&2",
    "echo 'sacct: error: Sending PersistInit msg: Connection refused' >&2",
    "echo 'sacct: error: Problem talking to the database: Connection refused' >&2",
    'exit 1',
  ].join('\n'),
  /** squeue that prints no rows and an error on stderr, yet exits 0. */
  squeueError:
    "echo 'squeue: error: slurm_receive_msg: Socket timed out on send/recv operation' >&2; exit 0",
  /** The real answer without the rows of one Slurm job (a squeue that forgets a running job). */
  forget: (jobId: string): string => `"$real" "$@" | awk -F'|' -v id=${shQuote(jobId)} '$1 != id'`,
} as const;

/** A bin directory of shims for every Slurm command, and the handles to steer and watch them. */
export interface SlurmShims {
  /** The directory, for the profile's `binDir`. */
  readonly binDir: string;
  /** From the next call on, `command` runs `behaviour` instead of the real command (null: the real one again). */
  behave(command: SlurmCommandName, behaviour: string | null): void;
  /** The argument lists of every call of `command` so far, oldest first. */
  calls(command: SlurmCommandName): string[][];
  /** Remove the shim of `command` (the directory then lacks it). */
  remove(command: SlurmCommandName): void;
}

/**
 * Make shims for sbatch, squeue, sacct, scancel and scontrol in a fresh directory. Each logs
 * its arguments, then runs its behaviour if one is set, else `exec`s the real command (found
 * on PATH now, called later by its absolute path).
 */
export function createSlurmShims(): SlurmShims {
  const binDir = mkdtempSync(join(tmpdir(), 'yonder-slurm-shims-'));
  const state = mkdtempSync(join(tmpdir(), 'yonder-slurm-shim-state-'));
  const file = (command: string, kind: 'behaviour' | 'calls') => join(state, `${command}.${kind}`);
  for (const command of SLURM_COMMANDS) {
    const real = execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim();
    writeFileSync(
      join(binDir, command),
      [
        '#!/bin/sh',
        `real=${shQuote(real)}`,
        `{ printf call; for a in "$@"; do printf '\\037%s' "$a"; done; printf '\\n'; } >> ${shQuote(file(command, 'calls'))}`,
        `if [ -f ${shQuote(file(command, 'behaviour'))} ]; then . ${shQuote(file(command, 'behaviour'))}; exit $?; fi`,
        'exec "$real" "$@"',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
  }
  return {
    binDir,
    behave(command, behaviour) {
      if (behaviour === null) rmSync(file(command, 'behaviour'), { force: true });
      else writeFileSync(file(command, 'behaviour'), `${behaviour}\n`);
    },
    calls(command) {
      const log = file(command, 'calls');
      if (!existsSync(log)) return [];
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('call'))
        .map((line) => line.split('\x1f').slice(1));
    },
    remove(command) {
      rmSync(join(binDir, command));
    },
  };
}
