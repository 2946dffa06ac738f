/** The poll's second look, for jobs squeue no longer lists as live: sacct and the wrappers' files on the target, in one round trip per chunk. */
import {
  type BackendContextV1,
  type BackendJobV1,
  type RunResultV1,
  toYonderError,
} from '@yonder/core';
import { epochToIso } from '@yonder/core/backend-kit';
import { parseSacct, type SacctRow } from './parse.js';
import type { QueryFailure, SlurmEvidence, WrapperFiles } from './reconcile.js';
import { RESOLVE_SCRIPT } from './scripts.js';
import {
  chunks,
  commandFailure,
  QUERY_CHUNK,
  QUERY_TIMEOUT_MS,
  sacctArguments,
  schedulerError,
} from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';

type Evidence = Omit<SlurmEvidence, 'queued'>;

/**
 * sacct's answer and the wrapper's files for each job (all with a Slurm id and on one
 * target): one remote command per chunk of jobs. A command that fails makes both sources
 * failed queries for its chunk; sacct failing alone (exit status, or a scheduler error on
 * stderr even with exit 0) leaves the files standing.
 */
export async function gatherEvidence(
  context: BackendContextV1,
  options: SlurmOptions,
  jobs: readonly BackendJobV1[],
): Promise<Map<string, Evidence>> {
  const out = new Map<string, Evidence>();
  const createdAt = jobs.map((job) => job.createdAt);
  for (const chunk of chunks(jobs, QUERY_CHUNK)) {
    const sacct = sacctArguments(
      `--jobs=${chunk.map((job) => job.externalId).join(',')}`,
      createdAt,
    );
    const withDirectory = chunk.filter((job) => typeof job.data.jobDir === 'string');
    let result: RunResultV1;
    try {
      result = await context.transport.runScript(
        RESOLVE_SCRIPT,
        [
          options.binDir ?? '',
          String(sacct.length),
          ...sacct,
          ...withDirectory.map((job) => String(job.data.jobDir)),
        ],
        { timeoutMs: QUERY_TIMEOUT_MS },
      );
    } catch (error) {
      const failure = { error: toYonderError(error, 'E_TRANSPORT').toJSON() };
      for (const job of chunk) out.set(job.id, { accounting: failure, files: failure });
      continue;
    }
    const answer = parseResolveOutput(result.stdout);
    const accounting = accountingOf(answer, result);
    const position = new Map(withDirectory.map((job, index) => [job.id, index]));
    for (const job of chunk) {
      const index = position.get(job.id) ?? -1;
      const files: WrapperFiles | QueryFailure =
        (index >= 0 ? answer.files.get(index) : undefined) ??
        failure(
          index >= 0
            ? `the job directory ${String(job.data.jobDir)} could not be read: ${commandFailure(result)}`
            : 'the job has no directory recorded',
        );
      out.set(job.id, { accounting, files });
    }
  }
  return out;
}

function failure(message: string, code = 'E_TRANSPORT'): QueryFailure {
  return { error: { code, message } };
}

/** RESOLVE_SCRIPT's output, split into sacct's answer and each directory's files. */
interface ResolveOutput {
  readonly sacctStatus: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly files: ReadonlyMap<number, WrapperFiles>;
}

/** Read RESOLVE_SCRIPT's output (lines it did not print are ignored). */
export function parseResolveOutput(text: string): ResolveOutput {
  let sacctStatus: number | null = null;
  const stdout: string[] = [];
  const stderr: string[] = [];
  const files = new Map<number, WrapperFiles>();
  for (const line of text.split('\n')) {
    if (line.startsWith('OUT ')) stdout.push(line.slice(4));
    else if (line.startsWith('ERR ')) stderr.push(line.slice(4));
    else if (/^SACCT \d+$/.test(line)) sacctStatus = Number(line.slice(6));
    else {
      const match = /^FILES (\d+) (\d+) ([01]) (\d+|-)(?: (\S+) (\S+))?$/.exec(line);
      if (match) {
        const startedAt = epochToIso(match[5]);
        const endedAt = epochToIso(match[6]);
        files.set(Number(match[1]), {
          run: Number(match[2]),
          started: match[3] === '1',
          exitCode: match[4] === '-' ? null : Number(match[4]),
          ...(startedAt === undefined ? {} : { startedAt }),
          ...(endedAt === undefined ? {} : { endedAt }),
        });
      }
    }
  }
  return { sacctStatus, stdout: stdout.join('\n'), stderr: stderr.join('\n'), files };
}

/** sacct's rows, or why its answer does not count: no answer, an exit status, or an error on stderr. */
function accountingOf(answer: ResolveOutput, result: RunResultV1): Evidence['accounting'] {
  if (answer.sacctStatus === null)
    return failure(`sacct did not run: ${commandFailure(result)}`, 'E_SCHEDULER_UNAVAILABLE');
  if (answer.sacctStatus !== 0 || schedulerError(answer.stderr) !== null) {
    const said = answer.stderr.trim().slice(-1200) || answer.stdout.trim().slice(-1200);
    return failure(
      `sacct failed: ${said || `exit status ${answer.sacctStatus}`}`,
      'E_SCHEDULER_UNAVAILABLE',
    );
  }
  return {
    rows: new Map<string, SacctRow>(parseSacct(answer.stdout).map((row) => [row.jobId, row])),
  };
}
