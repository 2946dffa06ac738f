/**
 * The fixed sh pieces that put a job in a container on its target: the check a submit makes
 * before anything is created (runtime, image, bind sources) and the launcher the job's wrapper
 * runs in place of the job's argv. Values arrive only as positional parameters.
 */

import { TRUSTED_DIRECTORY_FUNCTIONS } from '../remote/job-directory-functions.js';

/**
 * Defines `container_check RUNTIME IMAGE COUNT SOURCE…`, for a submit script to call before it
 * makes anything: each bind source must exist and pass the trust rule where it leads
 * (`trusted_path`: the user's or root's, nothing on the way another user can change, every link
 * followed and judged — a team directory swapped for a link to `~/.ssh` is refused naming
 * `container.binds.<i>`; exit 32), the runtime
 * must be on PATH (`container.runtime`, exit 30), and the image must be on this host already
 * (`container.image`, exit 31: podman's storage is asked, nothing is pulled; for apptainer a
 * readable file). Each refusal is one `yonder: <field>: …` line on stderr saying the fix. On
 * success it sets `container_ref` (what the launcher runs: podman's image id, so a tag moved
 * later changes nothing; apptainer's file), `container_id` and `container_digest` (podman: the
 * image id and its manifest digest; apptainer: the file's sha256, both).
 */
export const CONTAINER_CHECK_FUNCTIONS = `${TRUSTED_DIRECTORY_FUNCTIONS}
container_check() {
  c_rt=$1; c_image=$2; c_n=$3; shift 3
  c_i=0
  while [ "$c_i" -lt "$c_n" ]; do
    trusted_path "$1" "source of container.binds.$c_i" any user-or-root || return 32
    if [ "$td_exists" != 1 ]; then
      printf 'yonder: container.binds.%s: the source %s does not exist on the target; create it there, or correct the bind\\n' "$c_i" "$1" >&2
      return 32
    fi
    shift; c_i=$((c_i + 1))
  done
  if ! command -v "$c_rt" >/dev/null 2>&1; then
    printf 'yonder: container.runtime: %s is not installed on the target (not on PATH); install it there, or choose another runtime\\n' "$c_rt" >&2
    return 30
  fi
  case $c_rt in
    podman)
      if ! c_found=$(podman image inspect --format '{{.Id}} {{.Digest}}' -- "$c_image" 2>/dev/null) || [ -z "$c_found" ]; then
        printf 'yonder: container.image: podman has no image %s on the target; build, load or pull it there first (yonder never pulls)\\n' "$c_image" >&2
        return 31
      fi
      container_ref=\${c_found%% *}; container_id=sha256:$container_ref; container_digest=\${c_found#* } ;;
    apptainer)
      if [ ! -f "$c_image" ] || [ ! -r "$c_image" ]; then
        printf 'yonder: container.image: %s is not a readable image file on the target; copy the .sif there first\\n' "$c_image" >&2
        return 31
      fi
      container_ref=$c_image
      c_sum=$(sha256sum -- "$c_image" 2>/dev/null) || c_sum=
      c_sum=\${c_sum%% *}
      container_id=sha256:\${c_sum:-unknown}; container_digest=$container_id ;;
    *) printf 'yonder: container.runtime: %s is not a runtime yonder drives\\n' "$c_rt" >&2; return 30 ;;
  esac
}`;

/**
 * The launcher: what a job's wrapper runs, outside the container, in place of the job's argv.
 * Arguments: the runtime, the image to run (what `container_check` set as `container_ref`),
 * the number K of variables for podman's pipe and where each is (`YONDER_SECRET_<NAME>`, set by
 * the job's 0600 secrets file as outside a container; `YONDER_ENV_<NAME>`, set by the job's env
 * file), the number N of runtime options and the options, then the job's argv. It takes each
 * value from its variable (a later one of the same NAME wins) and removes it and yonder's own variables
 * (`YONDER_JOB_*`, among them the cancel marker) from what the runtime inherits: a runtime
 * leaves processes behind (rootless podman's pause process keeps the environment of the call
 * that made it), and the options carry the marker into the container, where cancel finds it.
 *
 * podman runs `run --rm --init --env-file=/dev/stdin OPTIONS IMAGE ARGV`, with
 * `--userns=keep-id` when not root, the wrapper's umask and a name of its own; the variables and
 * secrets reach it as `NAME=value` lines on a pipe, never in its argv (which every user can read
 * in /proc) or environment. podman runs in a process group of its own (`setsid`, where there is
 * one): a cancel's signal to the job's group reaches the launcher, which stops the container,
 * and not podman as well — whose forwarding of it raced the container's end and wrote runc's
 * `level=error msg="container not running"` into the job's log. The launcher waits for podman
 * and exits with its status — 127 and a line saying so when the command is not in the image
 * (126 when it cannot be run there), as docker does, where the container's init (catatonit)
 * says only `failed to exec pid1` and exits 1 (the launcher reads the end of its stderr, the
 * job's log, for that). A TERM, HUP or INT it gets (a cancel, Slurm's scancel) it passes to the
 * container itself with `podman kill` (podman's own forwarding runs
 * `runc kill` as a child, which a scheduler signalling every process of the job may kill
 * first), then waits on: podman removes the container before it exits. So the job may see a
 * cancel's TERM more than once.
 *
 * Right before the runtime starts, every bind source in the options (podman's `--volume=`,
 * apptainer's `--bind`) is judged again by the trust rule where it leads, as `container_check`
 * judged it at submit: a job may start long after (a queue), and a source swapped meanwhile for
 * a link to the user's `~/.ssh` is refused then (exit 126, nothing started). One that is gone,
 * the runtime reports.
 *
 * apptainer is exec'd as `exec OPTIONS IMAGE ARGV`; its variables come from the environment
 * as `APPTAINERENV_<NAME>`, as apptainer documents.
 */
export const CONTAINER_LAUNCH_SCRIPT = `${TRUSTED_DIRECTORY_FUNCTIONS}
yonder_bind() {
  trusted_path "$1" 'container bind source' any user-or-root || exit 126
}
yonder_rt=$1; yonder_image=$2; yonder_k=$3; shift 3
yonder_payload=
while [ "$yonder_k" -gt 0 ]; do
  case $1 in
    YONDER_SECRET_*) yonder_var=\${1#YONDER_SECRET_} ;;
    YONDER_ENV_*) yonder_var=\${1#YONDER_ENV_} ;;
    *) yonder_var= ;;
  esac
  case $yonder_var in ''|[0-9]*|*[!A-Za-z0-9_]*) printf 'yonder: %s is not a variable name\\n' "$1" >&2; exit 126 ;; esac
  eval "yonder_value=\\\${$1-}"
  yonder_payload="$yonder_payload$yonder_var=$yonder_value
"
  unset "$1"
  shift; yonder_k=$((yonder_k - 1))
done
yonder_value=
yonder_name=yonder-\${YONDER_JOB_ID:-job}-$$
unset YONDER_JOB_ID YONDER_JOB_NAME YONDER_JOB_DIR
yonder_n=$1; shift
yonder_c=$(($# - yonder_n)); yonder_i=0; yonder_prev=
while [ "$yonder_i" -lt "$yonder_n" ]; do
  yonder_a=$1; shift; set -- "$@" "$yonder_a"; yonder_i=$((yonder_i + 1))
  case $yonder_prev in --bind) yonder_bind "\${yonder_a%%:*}" ;; esac
  case $yonder_a in --volume=*) yonder_a=\${yonder_a#--volume=}; yonder_bind "\${yonder_a%%:*}" ;; esac
  yonder_prev=$yonder_a
done
set -- "$@" "$yonder_image"
yonder_i=0; yonder_cmd=$1
while [ "$yonder_i" -lt "$yonder_c" ]; do yonder_a=$1; shift; set -- "$@" "$yonder_a"; yonder_i=$((yonder_i + 1)); done
case $yonder_rt in
  podman)
    set -- "--name=$yonder_name" "--umask=$(umask)" "$@"
    if [ "$(id -u)" != 0 ]; then set -- --userns=keep-id "$@"; fi
    trap 'podman kill --signal=TERM -- "$yonder_name" >/dev/null 2>&1' TERM HUP INT
    yonder_own=; if command -v setsid >/dev/null 2>&1; then yonder_own=setsid; fi
    printf '%s' "$yonder_payload" | $yonder_own podman run --rm --init --env-file=/dev/stdin "$@" &
    yonder_pid=$!
    while :; do
      wait "$yonder_pid"; yonder_status=$?
      kill -0 "$yonder_pid" 2>/dev/null || break
    done
    if [ "$yonder_status" = 1 ] && [ -f "/proc/$$/fd/2" ]; then
      case $(tail -c 256 "/proc/$$/fd/2" 2>/dev/null) in
        *'): failed to exec pid1: No such file or directory')
          printf 'yonder: %s: no such command in the container image (not a file there, nor on its PATH)\n' "$yonder_cmd" >&2; exit 127 ;;
        *'): failed to exec pid1: Permission denied')
          printf 'yonder: %s: cannot be run in the container image (not executable there)\n' "$yonder_cmd" >&2; exit 126 ;;
      esac
    fi
    exit "$yonder_status"
    ;;
  apptainer) exec apptainer exec "$@" ;;
  *) printf 'yonder: %s is not a container runtime yonder drives\\n' "$yonder_rt" >&2; exit 126 ;;
esac`;
