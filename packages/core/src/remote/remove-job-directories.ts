/** Removing jobs' directories on their target for `yonder rm` and `prune`: one fixed sh script per target, which removes only a real directory of the user's named for the job, never through a link. */
import { toYonderError, YonderError } from '../errors/yonder-error.js';
import type { CleanupOutcomeV1 } from '../spec/backend/v1/backend-v1.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { TRUSTED_DIRECTORY_FUNCTIONS } from './job-directory-functions.js';

/**
 * Arguments: pairs of (job directory, job id). For each, prints `INDEX removed`, `INDEX absent`,
 * `INDEX kept REASON` (not the job's own to remove) or `INDEX failed ERROR` (`rm` could not
 * remove all of it). A directory is removed only when its last part is the job's id, the
 * directory above it passes the trust rules (`trusted_dir`: the user's or root's all the way
 * down, written by nobody else unless sticky), and, entered with `cd -P` and named relatively,
 * it is a real directory (not a link) owned by the user. `rm -rf` never follows the links
 * inside it. Another user's entry, or a link, in its place is kept and said so.
 */
export const REMOVE_JOB_DIRECTORIES_SCRIPT = `${TRUSTED_DIRECTORY_FUNCTIONS}
i=0
while [ $# -ge 2 ]; do
  dir=$1 id=$2; shift 2
  parent=\${dir%/*} name=\${dir##*/}
  case $dir in /*) ;; *) echo "$i kept not an absolute path"; i=$((i + 1)); continue ;; esac
  case $id in ''|*[!0-9a-f]*) echo "$i kept not a job id"; i=$((i + 1)); continue ;; esac
  if [ "$name" != "$id" ]; then echo "$i kept $dir is not named for the job"
  elif ! trusted_dir "\${parent:-/}" 'work directory' 2>/dev/null; then
    why=$(trusted_dir "\${parent:-/}" 'work directory' 2>&1); echo "$i kept $(printf '%s' "$why" | tr '\\n' ' ')"
  elif [ "$td_exists" != 1 ]; then echo "$i absent"
  elif ! cd -P -- "\${parent:-/}" 2>/dev/null; then echo "$i kept cannot enter \${parent:-/}"
  elif [ ! -e "./$name" ] && [ ! -L "./$name" ]; then echo "$i absent"
  elif [ -L "./$name" ]; then echo "$i kept $dir is a symbolic link, never followed"
  elif [ ! -d "./$name" ]; then echo "$i kept $dir is not a directory"
  elif [ ! -O "./$name" ]; then echo "$i kept $dir belongs to another user"
  elif err=$(rm -rf -- "./$name" 2>&1); then echo "$i removed"
  else echo "$i failed $(printf '%s' "$err" | tr '\\n' ' ')"
  fi
  cd / || exit 1
  i=$((i + 1))
done`;

/** A job whose directory is to be removed. */
export interface JobDirectoryEntry {
  readonly id: string;
  /** The job's directory on the target (absolute); empty when it never had one. */
  readonly jobDir: string;
}

/** The most jobs, and argument bytes, one command is given (far below any ARG_MAX). */
const BATCH_JOBS = 500;
const BATCH_BYTES = 64 * 1024;

/** `jobs` cut into runs that each fit one command. */
function batches(jobs: readonly JobDirectoryEntry[]): JobDirectoryEntry[][] {
  const out: JobDirectoryEntry[][] = [];
  let current: JobDirectoryEntry[] = [];
  let bytes = 0;
  for (const job of jobs) {
    const size = Buffer.byteLength(job.jobDir) + Buffer.byteLength(job.id) + 2;
    if (current.length > 0 && (current.length >= BATCH_JOBS || bytes + size > BATCH_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(job);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * Remove jobs' directories on the target, a few hundred per command (one command for the usual
 * handful): what each became, by job id. A job without a directory is `absent`.
 * @throws YonderError `E_TRANSPORT` (or the transport's own) when the target cannot be reached.
 */
export async function removeJobDirectories(
  transport: TransportV1,
  jobs: readonly JobDirectoryEntry[],
): Promise<Map<string, CleanupOutcomeV1>> {
  const out = new Map<string, CleanupOutcomeV1>();
  for (const job of jobs) if (job.jobDir === '') out.set(job.id, { kind: 'absent' });
  for (const batch of batches(jobs.filter((job) => job.jobDir !== '')))
    for (const [id, outcome] of await removeBatch(transport, batch)) out.set(id, outcome);
  return out;
}

async function removeBatch(
  transport: TransportV1,
  asked: readonly JobDirectoryEntry[],
): Promise<Map<string, CleanupOutcomeV1>> {
  const out = new Map<string, CleanupOutcomeV1>();
  let result: Awaited<ReturnType<TransportV1['runScript']>>;
  try {
    result = await transport.runScript(
      REMOVE_JOB_DIRECTORIES_SCRIPT,
      asked.flatMap((job) => [job.jobDir, job.id]),
      { timeoutMs: 120_000 },
    );
  } catch (error) {
    throw toYonderError(error, 'E_TRANSPORT');
  }
  const lines = new Map<number, string>();
  for (const line of result.stdout.split('\n')) {
    const match = /^(\d+) (.*)$/.exec(line);
    if (match) lines.set(Number(match[1]), match[2] as string);
  }
  const failed = (message: string): CleanupOutcomeV1 => ({
    kind: 'failed',
    error: new YonderError('E_CLEANUP_FAILED', message).toJSON(),
  });
  asked.forEach((job, index) => {
    const line = lines.get(index);
    if (line === 'removed' || line === 'absent') out.set(job.id, { kind: line });
    else if (line?.startsWith('kept ')) out.set(job.id, { kind: 'kept', reason: line.slice(5) });
    else if (line?.startsWith('failed '))
      out.set(
        job.id,
        failed(`Removing ${job.jobDir} on ${transport.target} failed: ${line.slice(7)}`),
      );
    else
      out.set(
        job.id,
        failed(
          `Removing ${job.jobDir} on ${transport.target} gave no answer (exit ${result.exitCode}): ${result.stderr.trim().slice(-300)}`,
        ),
      );
  });
  return out;
}
