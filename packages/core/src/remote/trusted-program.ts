/**
 * A program a profile names (a command template's first word), judged on the target by the one
 * trust rule before every run: found as exec would find it, then refused when it, or a directory
 * on the way to it, is one another user can change. For backend authors, from
 * `@yonder/core/backend-kit`.
 */
import { UNTRUSTED_BIN_EXIT } from './bin-dir.js';
import { TRUSTED_DIRECTORY_FUNCTIONS } from './job-directory-functions.js';

/**
 * Defines `run_trusted FIELD PROGRAM ARGS…` for a POSIX sh script (with the trust rule's
 * functions): judges PROGRAM (`trusted_program`) and runs what was judged with ARGS, waiting for
 * it. A refusal names FIELD (`options.status`…), the path, its owner and mode and the fix on
 * stderr and returns UNTRUSTED_BIN_EXIT (23); no such program, 127. Nothing runs then.
 */
export const TRUSTED_PROGRAM_FUNCTIONS = `${TRUSTED_DIRECTORY_FUNCTIONS}
run_trusted() {
  rt_field=$1; shift
  trusted_program "$1" "program of $rt_field"
  case $? in 0) ;; 127) return 127 ;; *) return ${UNTRUSTED_BIN_EXIT} ;; esac
  shift
  "$tp_path" "$@"
}`;

/** Run one program a profile names: `$1` the field naming it (`options.status`), then its argv. */
export const RUN_TRUSTED_PROGRAM = `${TRUSTED_PROGRAM_FUNCTIONS}
run_trusted "$@"`;

/**
 * Judge programs before they are used, running none: pairs of arguments, the field naming a
 * program and the program. Prints per pair that fails `MISSING <field> <program>` or
 * `UNTRUSTED <field> <the refusal, on one line>`.
 */
export const CHECK_PROGRAMS_SCRIPT = `${TRUSTED_DIRECTORY_FUNCTIONS}
while [ $# -ge 2 ]; do
  why=$(trusted_program "$2" "program of $1" 2>&1)
  case $? in
    0) ;;
    127) printf 'MISSING %s %s\\n' "$1" "$(printf '%s' "$2" | tr '\\n' ' ')" ;;
    *) printf 'UNTRUSTED %s %s\\n' "$1" "$(printf '%s' "$why" | tr '\\n' ' ')" ;;
  esac
  shift 2
done
`;

/** What CHECK_PROGRAMS_SCRIPT's output says is wrong, as problems naming each field. */
export function programProblems(stdout: string): string[] {
  return stdout.split('\n').flatMap((line) => {
    const [what, field, ...rest] = line.split(' ');
    const text = rest
      .join(' ')
      .replace(/^yonder: /, '')
      .trim();
    if (what === 'MISSING') return [`${field}: the program "${text}" is not found on the target`];
    if (what === 'UNTRUSTED') return [`${field}: ${text}`];
    return [];
  });
}
