import { JOB_WRAPPER_SCRIPT, PREPARE_JOB_DIRECTORY } from '@yonder/core';

/**
 * Every Slurm command runs after this prelude: variables that silently change what sbatch,
 * squeue, sacct and scancel do (SQUEUE_*, SACCT_*, SBATCH_*, SCANCEL_*, inherited SLURM_* of
 * an enclosing allocation) are removed, and time and locale are fixed. `$1` is the directory
 * holding the Slurm commands, or empty to use PATH.
 */
const PRELUDE = [
  // Shell builtins only (no sed): this runs before every Slurm command.
  'for v in $(export -p | while read -r _ l; do n=${l%%=*}; case $n in SQUEUE_*|SACCT_*|SBATCH_*|SCANCEL_*|SLURM_*) echo "$n" ;; esac; done); do',
  '  case $v in SLURM_CONF|SLURM_JWT) ;; *) unset "$v" 2>/dev/null || true ;; esac',
  'done',
  'export TZ=UTC LC_ALL=C SLURM_TIME_FORMAT=standard',
  'if [ -n "$1" ]; then PATH=$1:$PATH; export PATH; fi',
  'shift',
].join('\n');

/** Run one Slurm command: `$1` bin directory (or empty), then the command and its arguments. */
export const RUN_SLURM_COMMAND = `${PRELUDE}\nexec "$@"`;

/** The batch script: the shared job wrapper, with `#!/bin/sh` for sbatch. */
export const BATCH_SCRIPT = `#!/bin/sh\n${JOB_WRAPPER_SCRIPT}\n`;

/**
 * Prepare the job directory and submit, in one remote command.
 * Arguments: $1 bin dir, $2 work directory (empty: $HOME/.yonder/slurm), $3 job id,
 * $4 "envLength:secretsLength", $5 the batch script text, $6 the number of sbatch options
 * that follow; then the sbatch options; then the job's argv. stdin: see jobPayload().
 * Prints `DIR <job dir>` then sbatch's output. Exit 17: the job directory already exists.
 */
export const SUBMIT_SCRIPT = `${PRELUDE}
set -u
w=$1; id=$2; lengths=$3; script=$4; k=$5; shift 5
fallback="$HOME/.yonder/slurm"
${PREPARE_JOB_DIRECTORY}
printf '%s' "$script" > "$d/job.sh"
n=$#; i=0
while [ "$i" -lt "$k" ]; do a=$1; shift; set -- "$@" "$a"; i=$((i + 1)); done
set -- "$@" --output="$d/job.log" --open-mode=append "$d/job.sh" "$d"
m=$((n - k)); i=0
while [ "$i" -lt "$m" ]; do a=$1; shift; set -- "$@" "$a"; i=$((i + 1)); done
printf 'DIR %s\\n' "$d"
sbatch --parsable "$@"
rc=$?
if [ "$rc" -ne 0 ]; then rm -rf -- "$d"; fi
exit "$rc"
`;
