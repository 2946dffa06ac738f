/** The fixed shell scripts the backend runs on the target: the clean prelude of every Slurm command, the batch script, the batched submit, and the poll's look at accounting and the job directories. */
import {
  BIN_DIR_FUNCTIONS,
  CONTAINER_CHECK_FUNCTIONS,
  CONTAINER_LAUNCH_SCRIPT,
  JOB_WRAPPER_SCRIPT,
  PREPARE_JOB_DIRECTORY,
} from '@yonder/core/backend-kit';

/**
 * Every Slurm command runs after this prelude: variables that silently change what sbatch,
 * squeue, sacct and scancel do (SQUEUE_*, SACCT_*, SBATCH_*, SCANCEL_*, inherited SLURM_* of
 * an enclosing allocation) are removed, and time and locale are fixed. `$1` is the directory
 * holding the Slurm commands (a profile's `binDir`), or empty to use PATH; `slurm CMD ARGS…`
 * runs `$1/CMD` by its absolute path when it is set (never a same-named command found elsewhere
 * on PATH), each time after judging it by the trust rule (`bin_command`: a `binDir` another
 * user can change is refused, exit 23, nothing run), with `$1` first on PATH for that command
 * alone: the script's own tools are never looked up in it.
 */
/** What a `binDir` is called in the trust rule's refusals. */
const BIN_ROLE = 'Slurm command of options.binDir';

const PRELUDE = [
  // Shell builtins only (no sed): this runs before every Slurm command.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: ${l%%=*} is the shell's, not a template
  'for v in $(export -p | while read -r _ l; do n=${l%%=*}; case $n in SQUEUE_*|SACCT_*|SBATCH_*|SCANCEL_*|SLURM_*) echo "$n" ;; esac; done); do',
  '  case $v in SLURM_CONF|SLURM_JWT) ;; *) unset "$v" 2>/dev/null || true ;; esac',
  'done',
  'export TZ=UTC LC_ALL=C SLURM_TIME_FORMAT=standard',
  BIN_DIR_FUNCTIONS,
  'bin=$1; shift',
  `slurm() { if [ -n "$bin" ]; then bin_command "$bin" '${BIN_ROLE}' "$@"; else "$@"; fi; }`,
].join('\n');

/** Run one Slurm command: `$1` bin directory (or empty), then the command and its arguments. */
export const RUN_SLURM_COMMAND = `${PRELUDE}
if [ -n "$bin" ]; then
  bin_command_path "$bin" '${BIN_ROLE}' "$1" || exit $?
  shift; PATH=$bin\${PATH:+:$PATH} exec "$bin_path" "$@"
fi
exec "$@"`;

/** The commands a profile's `binDir` must hold. */
export const SLURM_COMMANDS = ['sbatch', 'squeue', 'sacct', 'scancel', 'scontrol'] as const;

/**
 * The batch script sbatch runs: `$1` the job directory, `$2` the working directory asked for
 * (empty: none), then the job's argv. A working directory that cannot be entered on the node
 * fails the job (slurmstepd would silently run it in /tmp). A rerun after a requeue
 * (SLURM_RESTART_COUNT=N) gets its own directory `run-N` for the wrapper's files, so each run
 * writes its own started marker and exit code. Secrets kept for reruns (`secrets.keep`,
 * requeue=true) are copied for the wrapper, which deletes its copy once read. Then the shared
 * job wrapper runs.
 */
export const BATCH_SCRIPT = `#!/bin/sh
d=$1; c=$2; shift 2
if [ -n "$c" ] && ! cd -- "$c"; then
  printf 'yonder: the working directory %s cannot be entered on %s\\n' "$c" "$(hostname)" >&2
  exit 126
fi
r=\${SLURM_RESTART_COUNT:-0}
case $r in ''|*[!0-9]*) r=0 ;; esac
w=$d
if [ "$r" -gt 0 ]; then
  w=$d/run-$r
  mkdir -p -- "$w" || exit 126
  if [ -f "$d/env.sh" ]; then cp -- "$d/env.sh" "$w/env.sh" || exit 126; fi
fi
if [ -f "$d/secrets.keep" ]; then cp -- "$d/secrets.keep" "$w/secrets.sh" || exit 126; fi
set -- "$w" "$@"
${JOB_WRAPPER_SCRIPT}
`;

/** SUBMIT_ONE's exit statuses for a working directory that cannot be used, and what each means. */
export const CWD_PROBLEMS: Readonly<Record<number, string>> = {
  20: 'does not exist on the target',
  21: 'is not a directory on the target',
  22: 'cannot be entered on the target (no search permission)',
};

/**
 * Submit one job (run in a subshell, so its `exit` ends only it): check the working
 * directory, prepare the job's directory from stdin, write the batch script (`$batch`, set
 * once for the whole batch), run `sbatch --parsable`. Arguments: work directory (empty:
 * $HOME/.yonder/slurm), job id, payload lengths, the job's working directory (empty: none), `1` to
 * keep the secrets for reruns, the container's runtime (empty: none), image and number of bind
 * sources, the sources (`container_check`), the number of sbatch options that follow; then the
 * options; then the job's argv (in a container, the launcher's arguments after the runtime and
 * the image, which this puts first: the image as the check resolved it). Prints `DIR <job dir>`,
 * for a container `IMAGE <id> <digest>`, and sbatch's output. Exit 17: the job directory
 * already exists; 20–22: the working directory cannot be used (CWD_PROBLEMS), 30–32: the
 * container (its runtime, image, a bind source) cannot be, nothing made.
 */
const SUBMIT_ONE = `submit_one() {
  w=$1; id=$2; lengths=$3; cwd=$4; keep=$5; crt=$6; cimage=$7; cn=$8; shift 8
  if [ -n "$cwd" ]; then
    [ -e "$cwd" ] || return 20
    [ -d "$cwd" ] || return 21
    (cd -- "$cwd") 2>/dev/null || return 22
  fi
  if [ -n "$crt" ]; then container_check "$crt" "$cimage" "$cn" "$@" || return $?; fi
  shift "$cn"
  k=$1; shift
  fallback="$HOME/.yonder/slurm"
${PREPARE_JOB_DIRECTORY}
  if [ "$keep" = 1 ] && [ -f "$d/secrets.sh" ]; then
    mv -f -- "$d/secrets.sh" "$d/secrets.keep" || { rm -rf -- "$d"; return 18; }
  fi
  printf '%s' "$batch" > "$d/job.sh"
  n=$#; i=0
  while [ "$i" -lt "$k" ]; do a=$1; shift; set -- "$@" "$a"; i=$((i + 1)); done
  set -- "$@" --output="$d/job.log" --open-mode=append "$d/job.sh" "$d" "$cwd"
  if [ -n "$crt" ]; then set -- "$@" sh -c "$launch" yonder-container "$crt" "$container_ref"; fi
  m=$((n - k)); i=0
  while [ "$i" -lt "$m" ]; do a=$1; shift; set -- "$@" "$a"; i=$((i + 1)); done
  printf 'DIR %s\\n' "$d"
  if [ -n "$crt" ]; then printf 'IMAGE %s %s\\n' "$container_id" "$container_digest"; fi
  slurm sbatch --parsable "$@"
  rc=$?
  if [ "$rc" -ne 0 ]; then rm -rf -- "$d"; fi
  return "$rc"
}`;

/**
 * Submit many jobs in one remote command. After the bin directory: the number of jobs, the
 * total payload bytes, then per job its argument count, its payload bytes and its
 * SUBMIT_ONE arguments. stdin is the payloads, one after the other. Each job's arguments are
 * handed to submit_one by reference (`"${7}"`), so no value is ever parsed by the shell. The
 * batch script is part of this script, not of any job's arguments (they travel as one
 * command line, which the system bounds). Prints, per job, `START <i>` before anything of
 * it is done, then `JOB <i> <exit status>`, `OUT <i> <line>` and `ERR <i> <line>`: a job
 * with no START line was never tried.
 */
export const SUBMIT_SCRIPT = `${PRELUDE}
set -u
${CONTAINER_CHECK_FUNCTIONS}
launch='${CONTAINER_LAUNCH_SCRIPT.replaceAll("'", "'\\''")}'
batch='${BATCH_SCRIPT.replaceAll("'", "'\\''")}'
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
  printf 'START %s\\n' "$job"
  out=$(eval "submit_one $refs" < "$input" 2> "$t/err"); rc=$?
  printf 'JOB %s %s\\n' "$job" "$rc"
  printf '%s\\n' "$out" | while IFS= read -r line; do printf 'OUT %s %s\\n' "$job" "$line"; done
  while IFS= read -r line; do printf 'ERR %s %s\\n' "$job" "$line"; done < "$t/err"
  shift "$n"
  job=$((job + 1))
done
`;

/**
 * What the poll needs about jobs squeue no longer lists as live, in one round trip: sacct's
 * answer, then what each job's wrapper left on the target. After the bin directory: the number
 * of sacct arguments, those arguments, then job directories. sacct runs first, so a job that
 * ends meanwhile shows its exit code rather than a stale accounting row. Prints `SACCT <exit
 * status>`, sacct's lines as `OUT <line>` and `ERR <line>`, then per directory (0-based, in
 * order) `FILES <i> <run> <started 0|1> <exit code> <started at> <ended at>` for its latest run
 * (`run-N`, else the directory itself as run 0): the times as the wrapper recorded them (epoch
 * seconds), each `-` when not recorded.
 */
export const RESOLVE_SCRIPT = `${PRELUDE}
k=$1; shift
t=$(mktemp -d) || exit 18
trap 'rm -rf -- "$t"' EXIT
refs=''; j=1
while [ "$j" -le "$k" ]; do refs="$refs \\"\\\${$j}\\""; j=$((j + 1)); done
eval "slurm sacct $refs" > "$t/out" 2> "$t/err"
printf 'SACCT %s\\n' "$?"
while IFS= read -r line || [ -n "$line" ]; do printf 'OUT %s\\n' "$line"; done < "$t/out"
while IFS= read -r line || [ -n "$line" ]; do printf 'ERR %s\\n' "$line"; done < "$t/err"
shift "$k"
word() { w=-; if [ -f "$1" ]; then w=$(cat -- "$1" 2>/dev/null); fi; case $w in ''|*[!0-9.]*) w=- ;; esac; printf '%s' "$w"; }
i=0
for d in "$@"; do
  x=0; r=$d
  for c in "$d"/run-*; do
    n=\${c##*/run-}
    case $n in ''|*[!0-9]*) continue ;; esac
    if [ -d "$c" ] && [ "$n" -gt "$x" ]; then x=$n; r=$c; fi
  done
  s=0; if [ -f "$r/wrapper.pid" ]; then s=1; fi
  e=$(word "$r/exit-code"); b=$(word "$r/started-at"); f=$(word "$r/ended-at")
  case $e in *[!0-9]*) e=- ;; esac
  printf 'FILES %s %s %s %s %s %s\\n' "$i" "$x" "$s" "$e" "$b" "$f"
  i=$((i + 1))
done
`;

/**
 * Delete the secrets of finished jobs (`$@` job directories): those kept for reruns
 * (requeue=true), and those of a job that ended without ever starting (cancelled while
 * pending), which no batch script came to read.
 */
export const FORGET_SECRETS_SCRIPT = `for d in "$@"; do rm -f -- "$d/secrets.keep" "$d/secrets.sh"; done
`;
