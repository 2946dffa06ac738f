import { renderEnvFile } from '../shell/render-env-file.js';
import {
  JOB_FILE_FUNCTIONS,
  PRIVATE_DIRECTORY_FUNCTIONS,
  TRUSTED_DIRECTORY_FUNCTIONS,
} from './job-directory-functions.js';

/**
 * Fixed sh fragments and scripts shared by the backends that run jobs on another machine
 * (ssh, slurm, command). Values only ever arrive as positional parameters or on stdin.
 */

/**
 * Make the job's private directory and fill it from stdin. Expects `w` (work directory, may
 * be empty), `fallback` (used when `w` is empty, e.g. "$HOME/.yonder/jobs"), `id` and
 * `lengths` ("<env bytes>:<secrets bytes>:<settings bytes>"); stdin is the env file, the secrets
 * file, then the settings; only what is there is written, and nothing is read when all are
 * empty. Before anything is made, the work directory and each directory above it must pass the
 * trust rules (`trusted_dir`: the user's or root's, written by nobody else unless sticky); what
 * is missing of it is made 0700. The job directory is made exclusively, mode 0700, entered and
 * checked, and its files (`env.sh`, `secrets.sh`, `settings.json`) are created there by
 * relative names under noclobber, never through a link. A payload shorter or
 * longer than `lengths` says (the sender died or the connection dropped while sending it) fails
 * and leaves no directory: a job never starts without its variables. Sets `d` (and `me`, and
 * defines the trust and private-directory functions). Exit 17: the directory exists (never
 * reused); 18/19: it cannot be made or filled; 23: the work directory is not to be trusted (the
 * message names the path, its owner and mode, and the fix). Every failure cleans up before it
 * says why: with its sender gone, saying so may be the script's last act (SIGPIPE).
 */
export const PREPARE_JOB_DIRECTORY = `${TRUSTED_DIRECTORY_FUNCTIONS}
${PRIVATE_DIRECTORY_FUNCTIONS}
umask 077
[ -n "$w" ] || w=$fallback
case $w in /*) ;; *) echo "yonder: the work directory $w is not an absolute path" >&2; exit 19 ;; esac
make_trusted_dir "$w" 'work directory' || exit $?
d="$w/$id"
if ! mkdir -m 700 -- "$d" 2>/dev/null; then
  if [ -e "$d" ] || [ -L "$d" ]; then echo "yonder: the job directory $d already exists; it is never reused" >&2; exit 17; fi
  echo "yonder: cannot create the job directory $d" >&2; exit 19
fi
n1=\${lengths%%:*}; rest=\${lengths#*:}; n2=\${rest%%:*}; n3=\${rest#*:}
(
  private_dirs 1 "$d"
  enter_private "$d" || exit 24
  set -C
  [ "$n1$n2$n3" != 000 ] || exit 0
  cat > .payload || exit 18
  [ "$(wc -c < .payload | tr -d ' ')" = "$((n1 + n2 + n3))" ] || exit 25
  { [ "$n1" = 0 ] || head -c "$n1" .payload > env.sh; } &&
    { [ "$n2" = 0 ] || tail -c +"$((n1 + 1))" .payload | head -c "$n2" > secrets.sh; } &&
    { [ "$n3" = 0 ] || tail -c +"$((n1 + n2 + 1))" .payload > settings.json; } &&
    rm -f -- .payload || exit 18
)
rc=$?
if [ "$rc" != 0 ]; then
  rm -rf -- "$d"
  case $rc in
    24) echo "yonder: the job directory $d is not the private directory just made (mode 0700, yours)" >&2 ;;
    25) echo "yonder: the job's files arrived incomplete" >&2 ;;
  esac
  exit 18
fi
`;

/**
 * The value of a `NAME value` line a remote script printed. Lines are split on "\n" only:
 * a path may hold U+2028 or U+2029, which JavaScript's `^`/`$` would take for line ends.
 */
export function outputField(stdout: string, name: string): string | undefined {
  const prefix = `${name} `;
  return stdout
    .split('\n')
    .find((line) => line.startsWith(prefix))
    ?.slice(prefix.length);
}

/** The output without its `NAME value` lines. */
export function withoutField(stdout: string, name: string): string {
  return stdout
    .split('\n')
    .filter((line) => !line.startsWith(`${name} `))
    .join('\n');
}

/** stdin and the `lengths` argument for PREPARE_JOB_DIRECTORY. */
export function jobPayload(
  env: Readonly<Record<string, string>>,
  secrets: Readonly<Record<string, string>>,
  settingsText: string | undefined,
): { input: string; lengths: string } {
  const envText = renderEnvFile(env);
  const secretsText = renderEnvFile(secrets);
  return {
    input: envText + secretsText + (settingsText ?? ''),
    lengths: `${Buffer.byteLength(envText)}:${Buffer.byteLength(secretsText)}:${Buffer.byteLength(settingsText ?? '')}`,
  };
}

/** What the wrapper left in a job directory once the job ended. */
export interface JobEnd {
  readonly exitCode: number;
  /** When the job started and ended (ISO), as the target's clock says; absent when not recorded. */
  readonly startedAt?: string;
  readonly endedAt?: string;
}

/**
 * A time the wrapper recorded (`date +%s.%N`, or `date +%s` where there are no nanoseconds) as
 * an ISO string (milliseconds); undefined when it is not one.
 */
export function epochToIso(text: string | undefined): string | undefined {
  const match = /^(\d{1,12})(?:\.(\d+))?$/.exec(text ?? '');
  if (!match) return undefined;
  const ms = Number(match[1]) * 1000 + Number((match[2] ?? '').padEnd(3, '0').slice(0, 3));
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/**
 * Read EXIT_CODES_SCRIPT's output: job directory → what its wrapper recorded. Split on "\n",
 * and on the last three tabs only, so a directory may hold any character but a line break.
 */
export function parseJobEnds(stdout: string): Map<string, JobEnd> {
  const ends = new Map<string, JobEnd>();
  for (const line of stdout.split('\n')) {
    const fields = line.split('\t');
    if (fields.length < 4) continue;
    const [code, started, ended] = fields.slice(-3) as [string, string, string];
    const dir = fields.slice(0, -3).join('\t');
    if (!dir || !/^\d+$/.test(code)) continue;
    const startedAt = epochToIso(started);
    const endedAt = epochToIso(ended);
    ends.set(dir, {
      exitCode: Number(code),
      ...(startedAt === undefined ? {} : { startedAt }),
      ...(endedAt === undefined ? {} : { endedAt }),
    });
  }
  return ends;
}

/** Read EXIT_CODES_SCRIPT's output: job directory → exit status. */
export function parseExitCodes(stdout: string): Map<string, number> {
  return new Map([...parseJobEnds(stdout)].map(([dir, end]) => [dir, end.exitCode]));
}

/**
 * For each job directory ($1…) whose wrapper recorded an exit status, print
 * `<dir>\\t<code>\\t<started>\\t<ended>` (the times as the wrapper wrote them, `-` when missing).
 * Only private job directories of the user's are read, entered and by relative names: an exit
 * code in a directory another user made or can write is never reported.
 */
export const EXIT_CODES_SCRIPT = `me=$(id -u)
${PRIVATE_DIRECTORY_FUNCTIONS}
${JOB_FILE_FUNCTIONS}
private_dirs 1 "$@"
for d in "$@"; do
  enter_private "$d" && read_word exit-code || continue
  code=$word
  read_word started-at; started=\${word:--}
  read_word ended-at; ended=\${word:--}
  printf '%s\\t%s\\t%s\\t%s\\n' "$d" "$code" "$started" "$ended"
done
`;
