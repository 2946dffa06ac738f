/**
 * The attacker of the work-directory tests, as another user on the same machine would play:
 * a place of their own that anyone may write (with an env.sh they would like run), and a loop
 * that races the victim to make the work directory first (a link to their place, or a directory
 * of their own), swaps every job directory it can reach and reads whatever it can of the
 * victim's. What it managed is kept, for the test to count.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asUser, rootDir, startAsUser, type TestUser } from './test-users.js';

/** `evil`: the attacker's world-writable directory under `base`, holding an env.sh that would touch `pwned`. */
export function attackerPlace(attacker: TestUser, base: string, pwned: string): string {
  const evil = join(base, 'evil');
  asUser(attacker, ['mkdir', '-m', '777', evil]);
  asUser(attacker, ['sh', '-c', `printf 'touch %s\\n' "$1" > "$2/env.sh"`, 'x', pwned, evil]);
  return evil;
}

const ATTACK = `token=$1 evil=$2 pwned=$3 log=$4 loot=$5 work=$6 max=$7 last=
while :; do
  t=$(cat "$token" 2>/dev/null)
  if [ -n "$t" ] && [ "$t" != "$last" ]; then
    last=$t
    r=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')
    ms=$((r * max / 255))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    if [ $((r % 2)) = 0 ]; then ln -s "$evil" "$work" 2>/dev/null; else mkdir -m 777 "$work" 2>/dev/null; fi
  fi
  for j in "$evil"/* "$work"/*; do
    # A directory of someone else's (the victim's): never the attacker's own, nor a link.
    [ -d "$j" ] && [ ! -L "$j" ] && [ ! -O "$j" ] || continue
    case $j in *.stolen) continue ;; esac
    if mv "$j" "$j.stolen" 2>/dev/null; then
      mkdir -m 777 "$j" && printf 'touch %s\\n' "$pwned" > "$j/env.sh" && echo 42 > "$j/exit-code"
      echo "swapped $j" >> "$log"
    fi
    for f in "$j/secrets.sh" "$j/.payload" "$j/env.sh"; do cat "$f" >> "$loot" 2>/dev/null; done
  done
  sleep 0.002
done`;

export interface WorkdirAttack {
  /** Where the victim's work directory goes (missing at the start of each round). */
  readonly workdir: string;
  /** Start round `round`: the work directory is removed, and the attacker told to race for it. */
  round(round: number): void;
  /** What the attacker managed: job directories swapped, whether `secret` was read, whether their env.sh ran. */
  evidence(secret: string): { swaps: string[]; secretRead: boolean; envRun: boolean };
}

/**
 * Start the attacker's loop (as `attacker`, stopped by cleanupUsers) against a work directory
 * in a fresh sticky directory anyone may write, as /tmp is. Each round the attacker waits a
 * random time up to `maxDelayMs` (about as long as a submit takes to reach the target) before
 * planting, so that either side may be first, and some rounds are decided in the submit's own
 * check-then-make window.
 */
export function startWorkdirAttack(
  attacker: TestUser,
  prefix: string,
  maxDelayMs: number,
): WorkdirAttack {
  const base = rootDir(prefix, 0o1777);
  const control = rootDir(`${prefix}-control`, 0o755);
  const pwned = join(base, 'pwned');
  const evil = attackerPlace(attacker, base, pwned);
  const workdir = join(base, 'race');
  const token = join(control, 'current');
  const loot = join(base, 'loot');
  const log = join(base, 'attack.log');
  asUser(attacker, ['sh', '-c', ': > "$1"; : > "$2"; chmod 644 "$1" "$2"', 'x', loot, log]);
  writeFileSync(token, '');
  execFileSync('chmod', ['0644', token]);
  const args = [token, evil, pwned, log, loot, workdir, String(maxDelayMs)];
  startAsUser(attacker, ['sh', '-c', ATTACK, 'attack', ...args]);
  return {
    workdir,
    round(round) {
      execFileSync('rm', ['-rf', '--', workdir]);
      writeFileSync(token, `${round}\n`);
    },
    evidence(secret) {
      return {
        swaps: readFileSync(log, 'utf8').split('\n').filter(Boolean),
        secretRead: readFileSync(loot, 'utf8').includes(secret),
        envRun: existsSync(pwned),
      };
    },
  };
}
