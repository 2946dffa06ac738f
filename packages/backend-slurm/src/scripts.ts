import { JOB_WRAPPER_SCRIPT } from '@yonder/core';

/**
 * Every Slurm command runs after this prelude: variables that silently change what sbatch,
 * squeue, sacct and scancel do (SQUEUE_*, SACCT_*, SBATCH_*, SCANCEL_*, inherited SLURM_* of
 * an enclosing allocation) are removed, and time and locale are fixed. `$1` is the directory
 * holding the Slurm commands, or empty to use PATH.
 */
const PRELUDE = [
  'for v in $(env | sed -n -e "s/^\\(SQUEUE_[A-Za-z0-9_]*\\)=.*/\\1/p" -e "s/^\\(SACCT_[A-Za-z0-9_]*\\)=.*/\\1/p" -e "s/^\\(SBATCH_[A-Za-z0-9_]*\\)=.*/\\1/p" -e "s/^\\(SCANCEL_[A-Za-z0-9_]*\\)=.*/\\1/p" -e "s/^\\(SLURM_[A-Za-z0-9_]*\\)=.*/\\1/p"); do',
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
 * $4 byte length of the secrets part of stdin, $5 the batch script text, $6 the number of
 * sbatch options that follow; then the sbatch options; then the job's argv.
 * stdin: the env file (job env, 0600), then the secrets part, then the settings text.
 * Lengths of each are in $4 as "envLength:secretsLength".
 * Prints `DIR <job dir>` then sbatch's output. Exit 17: the job directory already exists.
 */
export const SUBMIT_SCRIPT = `${PRELUDE}
set -u
umask 077
w=$1; id=$2; lengths=$3; script=$4; k=$5; shift 5
[ -n "$w" ] || w="$HOME/.yonder/slurm"
mkdir -p -- "$w" || exit 19
d="$w/$id"
if ! mkdir -- "$d" 2>/dev/null; then
  if [ -e "$d" ]; then echo "yonder: the job directory $d already exists; it is never reused" >&2; exit 17; fi
  echo "yonder: cannot create the job directory $d" >&2; exit 19
fi
p="$d/.payload"
cat > "$p" || { rm -rf -- "$d"; exit 18; }
n1=\${lengths%%:*}; n2=\${lengths#*:}
head -c "$n1" "$p" > "$d/env.sh"
tail -c +"$((n1 + 1))" "$p" | head -c "$n2" > "$d/secrets.sh"
tail -c +"$((n1 + n2 + 1))" "$p" > "$d/settings.json"
rm -f -- "$p"
[ -s "$d/secrets.sh" ] || rm -f -- "$d/secrets.sh"
[ -s "$d/env.sh" ] || rm -f -- "$d/env.sh"
[ -s "$d/settings.json" ] || rm -f -- "$d/settings.json"
printf '%s' "$script" > "$d/job.sh"
chmod 700 "$d/job.sh"
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

/**
 * Read a log: $1 path, $2 "tail" or "offset", $3 lines or byte offset, $4 max bytes.
 * Prints `MISSING` or `SIZE <bytes>` then the text.
 */
export const READ_LOG_SCRIPT = `f=$1
if [ ! -f "$f" ]; then echo MISSING; exit 0; fi
printf 'SIZE %s\\n' "$(wc -c < "$f" | tr -d ' ')"
if [ "$2" = tail ]; then tail -n "$3" -- "$f" | tail -c "$4"; else tail -c +"$(($3 + 1))" -- "$f" | head -c "$4"; fi
`;

/** Print `<dir>\t<code>` for each job directory ($1…) whose wrapper recorded an exit status. */
export const EXIT_CODES_SCRIPT = `for d in "$@"; do
  if [ -f "$d/exit-code" ]; then printf '%s\\t%s\\n' "$d" "$(cat "$d/exit-code")"; fi
done
`;
