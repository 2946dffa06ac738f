import { renderEnvFile } from '../shell/render-env-file.js';

/**
 * Fixed sh fragments and scripts shared by the backends that run jobs on another machine
 * (ssh, slurm, command). Values only ever arrive as positional parameters or on stdin.
 */

/**
 * Make the job's private directory and fill it from stdin. Expects `w` (work directory, may
 * be empty), `fallback` (used when `w` is empty, e.g. "$HOME/.yonder/jobs"), `id` and
 * `lengths` ("<env bytes>:<secrets bytes>:<settings bytes>"); stdin is the env file, the secrets
 * file, then the settings; only what is there is written, and nothing is read when all are
 * empty. A payload shorter or longer than `lengths` says (the sender died or the connection
 * dropped while sending it) fails and leaves no directory: a job never starts without its
 * variables. Sets `d`. Exit 17: the directory exists (never reused); 18/19: it cannot be made
 * or filled. Every failure cleans up before it says why: with its sender gone, saying so may
 * be the script's last act (SIGPIPE).
 */
export const PREPARE_JOB_DIRECTORY = `umask 077
[ -n "$w" ] || w=$fallback
[ -d "$w" ] || mkdir -p -- "$w" || exit 19
d="$w/$id"
if ! mkdir -- "$d" 2>/dev/null; then
  if [ -e "$d" ]; then echo "yonder: the job directory $d already exists; it is never reused" >&2; exit 17; fi
  echo "yonder: cannot create the job directory $d" >&2; exit 19
fi
n1=\${lengths%%:*}; rest=\${lengths#*:}; n2=\${rest%%:*}; n3=\${rest#*:}
if [ "$n1$n2$n3" != 000 ]; then
  p="$d/.payload"
  cat > "$p" || { rm -rf -- "$d"; exit 18; }
  if [ "$(wc -c < "$p" | tr -d ' ')" != "$((n1 + n2 + n3))" ]; then
    rm -rf -- "$d"; echo "yonder: the job's files arrived incomplete" >&2; exit 18
  fi
  { [ "$n1" = 0 ] || head -c "$n1" "$p" > "$d/env.sh"; } &&
    { [ "$n2" = 0 ] || tail -c +"$((n1 + 1))" "$p" | head -c "$n2" > "$d/secrets.sh"; } &&
    { [ "$n3" = 0 ] || tail -c +"$((n1 + n2 + 1))" "$p" > "$d/settings.json"; } &&
    rm -f -- "$p" || { rm -rf -- "$d"; exit 18; }
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

/**
 * Read EXIT_CODES_SCRIPT's output: job directory → exit status. Split on "\n" and on the last
 * tab only, so a directory may hold any character but those two.
 */
export function parseExitCodes(stdout: string): Map<string, number> {
  const codes = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const tab = line.lastIndexOf('\t');
    const code = line.slice(tab + 1);
    if (tab > 0 && /^\d+$/.test(code)) codes.set(line.slice(0, tab), Number(code));
  }
  return codes;
}

/** Print `<dir>\\t<code>` for each job directory ($1…) whose wrapper recorded an exit status. */
export const EXIT_CODES_SCRIPT = `for d in "$@"; do
  if [ -f "$d/exit-code" ]; then printf '%s\\t%s\\n' "$d" "$(cat "$d/exit-code")"; fi
done
`;
