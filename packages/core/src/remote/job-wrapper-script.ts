import { PROCESS_IDENTITY_FUNCTIONS } from '../process/process-identity-script.js';
import { JOB_FILE_FUNCTIONS, PRIVATE_DIRECTORY_FUNCTIONS } from './job-directory-functions.js';

/**
 * The fixed sh script that runs every job on a POSIX host (local, over ssh, under Slurm or
 * another scheduler). `$1` is the job directory, the rest is the job's argv; nothing is
 * interpolated. The wrapper starts in the job's working directory, keeps it open, checks that
 * the job directory is a private directory of the user's (a real directory, mode 0700) and
 * `cd`s into it, then names its files relatively only: its own pid and start time
 * (`wrapper.pid`), the job's start and end (`started-at`, `ended-at`: epoch seconds, with
 * nanoseconds where `date +%s.%N` gives them) and its exit status (`exit-code`), each written to
 * a temporary under noclobber and renamed, so a reader never sees half and no planted link is
 * followed. Room for the end is set aside when the job starts (`.exit-code.spare`,
 * `.ended-at.spare`, 64 newlines each): when the disk is full by then (the job's own log filled
 * it, or someone else's files), the end is written over a spare in place and renamed (readers
 * take its first line), so the job's true exit status survives.
 *
 * The job runs in a subshell that records its pid (`job.pid`), opens the job's variables
 * (`env.sh`) and secrets (`secrets.sh`, deleted once open) from their 0600 files, returns to the
 * working directory and loads them there, then execs the job: the job's variables never reach
 * the wrapper's own (an `--env d=/x` cannot move where it writes), and the secrets are in the
 * environment of the job's process and nothing started before it. The job runs in the
 * foreground (so it keeps default signal handling), with the log as its stderr while the
 * wrapper's own points nowhere (no "Killed" of the shell's in the log); the wrapper survives the
 * TERM sent to the job's process group long enough to record the exit status. A TERM, HUP or INT that arrives
 * before the job starts (a cancel right after the submit) is recorded as the job's end (143, 129,
 * 130), its secrets file deleted, and the job never starts.
 */
export const JOB_WRAPPER_SCRIPT = [
  'd=$1; shift',
  // A cancel that arrives before the job starts is remembered, and the job then never starts.
  'yonder_signal=',
  "trap 'yonder_signal=143' TERM; trap 'yonder_signal=129' HUP; trap 'yonder_signal=130' INT",
  PROCESS_IDENTITY_FUNCTIONS,
  PRIVATE_DIRECTORY_FUNCTIONS,
  JOB_FILE_FUNCTIONS,
  'me=$(id -u)',
  // The job's working directory: kept open (fd 8) so the job starts in it even if its path changes.
  `yonder_pwd=$PWD yonder_oldpwd=\${OLDPWD-} yonder_oldset=\${OLDPWD+1} yonder_here=`,
  'if { command exec 8<.; } 2>/dev/null; then yonder_here=1; fi',
  'private_dirs 1 "$d"',
  'if ! enter_private "$d"; then',
  '  echo "yonder: the job directory $d is not a private directory of yours (a real directory, mode 0700, not a link): the job does not run" >&2',
  '  exit 125',
  'fi',
  // Its own start time (/proc/$$/stat field 22), so a recycled pid is never taken for it.
  'proc_stat "/proc/$$/stat"',
  'put wrapper.pid "$$ $ps_start" || exit 125',
  "trap ':' TERM HUP INT",
  'if [ -n "$yonder_signal" ]; then',
  '  rm -f -- secrets.sh',
  '  code=$yonder_signal',
  'else',
  'clock; put started-at "$now"',
  // Room for the two files the job's end writes, set aside now: a disk the job fills (its own
  // log, or another user's files) must not cost its exit status.
  'spare ended-at; spare exit-code',
  // The job's stderr is the log, but the wrapper's own is nowhere while the job runs: a shell
  // reports a job that died by a signal ("Killed", "Segmentation fault") on its stderr, and the
  // log holds only what the job wrote.
  'exec 6>&2 2>/dev/null',
  '(',
  '  exec 2>&6 6>&-',
  '  exec 7</dev/null 9</dev/null',
  '  if [ -f env.sh ] && [ ! -L env.sh ]; then exec 7< env.sh; fi',
  '  if [ -f secrets.sh ] && [ ! -L secrets.sh ]; then exec 9< secrets.sh; rm -f -- secrets.sh; fi',
  '  { IFS=" " read -r yonder_self yonder_rest; } < /proc/self/stat 2>/dev/null',
  '  proc_stat /proc/self/stat && put job.pid "$yonder_self $ps_start"',
  '  if [ -n "$yonder_here" ]; then cd -P /proc/self/fd/8; else cd -- "$yonder_pwd"; fi 2>/dev/null ||',
  `    { echo "yonder: cannot return to the job's working directory $yonder_pwd" >&2; exit 125; }`,
  '  PWD=$yonder_pwd',
  '  if [ -n "$yonder_oldset" ]; then OLDPWD=$yonder_oldpwd; fi',
  '  exec 8<&-',
  // From here on only the job's own names: nothing below reads a variable env.sh may have set.
  '  . /proc/self/fd/7 && . /proc/self/fd/9 || exit 126',
  '  exec 7<&- 9<&-',
  '  exec "$@"',
  ')',
  'code=$?',
  'exec 2>&6 6>&-',
  'fi',
  'clock; put ended-at "$now"',
  'put exit-code "$code"',
  'rm -f -- .ended-at.spare .exit-code.spare',
  'exit "$code"',
].join('\n');
