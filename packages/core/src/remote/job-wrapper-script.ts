import { PROCESS_IDENTITY_FUNCTIONS } from '../process/process-identity-script.js';

/**
 * The fixed sh script that runs every job on a POSIX host (local, over ssh, under Slurm or
 * another scheduler). `$1` is the job directory, the rest is the job's argv; nothing is
 * interpolated. It records its own pid and start time (wrapper.pid), loads the job's variables
 * (env.sh) and secrets (secrets.sh, then deletes it) from 0600 files, runs the job in the
 * foreground (so the job keeps default signal handling), survives the TERM sent to the job's
 * process group long enough to record the exit status, and writes that status atomically
 * (temporary file, then rename), so a reader never sees half a code.
 */
export const JOB_WRAPPER_SCRIPT = [
  'd=$1; shift',
  PROCESS_IDENTITY_FUNCTIONS,
  // Its own start time (/proc/$$/stat field 22), so a recycled pid is never taken for it.
  'proc_stat "/proc/$$/stat"',
  'printf "%s %s\\n" "$$" "$ps_start" > "$d/.wrapper.pid.tmp" && mv -f -- "$d/.wrapper.pid.tmp" "$d/wrapper.pid"',
  'if [ -f "$d/env.sh" ]; then . "$d/env.sh" || exit 126; fi',
  'if [ -f "$d/secrets.sh" ]; then . "$d/secrets.sh" || exit 126; rm -f -- "$d/secrets.sh"; fi',
  "trap ':' TERM HUP INT",
  '"$@"',
  'code=$?',
  'printf "%s\\n" "$code" > "$d/.exit-code.tmp" && mv -f -- "$d/.exit-code.tmp" "$d/exit-code"',
  'exit "$code"',
].join('\n');
