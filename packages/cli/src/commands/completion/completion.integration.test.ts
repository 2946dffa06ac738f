/** `yonder completion`: the bash script sourced in a real bash, asked as bash asks (COMP_WORDS, the function `complete -p` names), with profile names and job ids from the ledger; zsh and fish scripts checked by their shells when present. */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_BIN, cliEnv, requireCliBuild, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let bin: string;
const yonder = (args: string[]) => runCli(args, { state });

beforeAll(() => {
  requireCliBuild();
  state = mkdtempSync(join(tmpdir(), 'yonder-completion-'));
  bin = mkdtempSync(join(tmpdir(), 'yonder-completion-bin-'));
  // `yonder` on PATH, as an installed one is: the script calls it back for profiles and jobs.
  writeFileSync(join(bin, 'yonder'), `#!/bin/sh\nexec '${process.execPath}' '${CLI_BIN}' "$@"\n`);
  chmodSync(join(bin, 'yonder'), 0o755);
});
afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(bin, { recursive: true, force: true });
});

/** What bash completes for the words typed so far (the last one being completed). */
function complete(words: string[]): string[] {
  const script = `eval "$(yonder completion bash)"
spec=$(complete -p yonder) || exit 9
fn=\${spec#*-F }; fn=\${fn%% *}
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
"$fn"
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const result = spawnSync('bash', ['-c', script, 'bash', ...words], {
    encoding: 'utf8',
    env: { ...cliEnv(state), PATH: `${bin}:${process.env.PATH}` },
  });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.split('\n').filter(Boolean);
}

describe('yonder completion bash', () => {
  it('completes commands, flags, profile names and job ids', async () => {
    expect((await yonder(['profile', 'add', 'hpc-1', '--backend', 'local'])).code).toBe(0);
    const id = (await yonder(['submit', '--', 'true'])).stdout.trim();
    expect(complete(['yonder', 'su'])).toEqual(['submit']);
    expect(complete(['yonder', 'pr']).sort()).toEqual(['profile', 'prune']);
    expect(complete(['yonder', 'submit', '--sch'])).toEqual(['--scheduler-option']);
    expect(complete(['yonder', 'wait', '--gi'])).toEqual(['--give-up-after']);
    expect(complete(['yonder', 'submit', '--profile', 'h'])).toEqual(['hpc-1']);
    expect(complete(['yonder', 'profile', 'show', '']).sort()).toEqual(['hpc-1', 'local']);
    expect(complete(['yonder', 'profile', 'e'])).toEqual(['edit']);
    expect(complete(['yonder', 'status', id.slice(0, 3)])).toEqual([id]);
    expect(complete(['yonder', 'rm', ''])).toEqual([id]);
    expect(complete(['yonder', 'completion', 'f'])).toEqual(['fish']);
    expect(complete(['yonder', 'list', '--state', 'succ'])).toEqual(['succeeded']);
    // Exactly the flags prune's help lists, no prose mention among them.
    const flags = complete(['yonder', 'prune', '--']);
    expect(flags.sort()).toEqual(['--dry-run', '--json', '--older-than', '--state']);
  }, 60_000);

  it('refuses a shell it does not know, and the zsh and fish scripts parse', async () => {
    const bad = await yonder(['completion', 'tcsh']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('bash, zsh and fish');
    const fish = await yonder(['completion', 'fish']);
    expect(fish.stdout).toContain(
      "complete -c yonder -n '__fish_seen_subcommand_from submit' -l scheduler-option",
    );
    const zsh = await yonder(['completion', 'zsh']);
    expect(zsh.stdout).toContain('bashcompinit');
    // bash -n: the zsh script's body is the bash function; it must at least parse as shell.
    const parsed = spawnSync('bash', ['-n'], { input: zsh.stdout.replace(/^autoload.*$/gm, ':') });
    expect(parsed.status).toBe(0);
  }, 60_000);
});
