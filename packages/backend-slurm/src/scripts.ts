/** The fixed shell scripts the backend runs on the target: the clean prelude of every Slurm command, the batch script and the batched submit. */
import { JOB_WRAPPER_SCRIPT, PREPARE_JOB_DIRECTORY } from '@yonder/core/backend-kit';

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
 * Submit one job (run in a subshell, so its `exit` ends only it): prepare its directory from
 * stdin, write the batch script, run `sbatch --parsable`. Arguments: work directory (empty:
 * $HOME/.yonder/slurm), job id, payload lengths, the batch script text, the number of sbatch
 * options that follow; then the options; then the job's argv. Prints `DIR <job dir>` and
 * sbatch's output. Exit 17: the job directory already exists.
 */
const SUBMIT_ONE = `submit_one() {
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
  return "$rc"
}`;

/**
 * Submit many jobs in one remote command. After the bin directory: the number of jobs, the
 * total payload bytes, then per job its argument count, its payload bytes and its
 * SUBMIT_ONE arguments. stdin is the payloads, one after the other. Each job's arguments are
 * handed to submit_one by reference (`"${7}"`), so no value is ever parsed by the shell.
 * Prints, per job, `JOB <i> <exit status>`, then `OUT <i> <line>` and `ERR <i> <line>`.
 */
export const SUBMIT_SCRIPT = `${PRELUDE}
set -u
${SUBMIT_ONE}
count=$1; total=$2; shift 2
t=$(mktemp -d) || exit 18
trap 'rm -rf -- "$t"' EXIT
if [ "$total" != 0 ]; then cat > "$t/payload" || exit 18; fi
off=0; job=0
while [ "$job" -lt "$count" ]; do
  n=$1; len=$2; shift 2
  refs=''; j=1
  while [ "$j" -le "$n" ]; do refs="$refs \\"\\\${$j}\\""; j=$((j + 1)); done
  input=/dev/null
  if [ "$len" != 0 ]; then tail -c +"$((off + 1))" "$t/payload" | head -c "$len" > "$t/in"; input=$t/in; fi
  off=$((off + len))
  out=$(eval "submit_one $refs" < "$input" 2> "$t/err"); rc=$?
  printf 'JOB %s %s\\n' "$job" "$rc"
  printf '%s\\n' "$out" | while IFS= read -r line; do printf 'OUT %s %s\\n' "$job" "$line"; done
  while IFS= read -r line; do printf 'ERR %s %s\\n' "$job" "$line"; done < "$t/err"
  shift "$n"
  job=$((job + 1))
done
`;
