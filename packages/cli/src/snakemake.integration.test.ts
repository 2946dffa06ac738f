/** The docs' Snakemake recipe (docs/snakemake.md), run by Debian's snakemake through its generic cluster executor against the built CLI on the local backend: a fan-out, a join and one failing rule, with no adapter script. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_BIN, cliEnv, collectProcess, requireCliBuild, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SNAKEFILE = `rule all:
    input: "joined.txt", "broken.txt"

rule part:
    output: "part-{n}.txt"
    shell: "echo 'part {wildcards.n}' > {output}"

rule join:
    input: expand("part-{n}.txt", n=[1, 2, 3])
    output: "joined.txt"
    shell: "cat {input} > {output}"

rule broken:
    output: "broken.txt"
    shell: "echo failing >&2; exit 1"
`;

/** The recipe's cluster commands, as docs/snakemake.md gives them, with `yonder` as this build. */
function recipe(yonder: string): { cluster: string; status: string; cancel: string } {
  const text = readFileSync(new URL('../../../docs/snakemake.md', import.meta.url), 'utf8');
  const option = (name: string): string => {
    const found = new RegExp(`--${name} "(yonder [^"]+)"`).exec(text)?.[1];
    if (!found) throw new Error(`docs/snakemake.md gives no --${name} "yonder …"`);
    return found.replace(/^yonder /, `${yonder} `);
  };
  return {
    cluster: option('cluster'),
    status: option('cluster-status'),
    cancel: option('cluster-cancel'),
  };
}

/** One word for the shell Snakemake runs its cluster commands through. */
const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

let state: string;
let work: string;

beforeAll(() => {
  requireCliBuild();
  if (spawnSync('snakemake', ['--version']).status !== 0)
    throw new Error(
      'snakemake is missing: apt-get install -y snakemake (scripts/test-all.sh does)',
    );
  state = mkdtempSync(join(tmpdir(), 'yonder-snakemake-state-'));
  // Snakemake hands its job scripts to the cluster command through a shell, unquoted: no spaces.
  work = mkdtempSync(join(tmpdir(), 'yonder-snakemake-'));
});
afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('Snakemake through its generic cluster executor', () => {
  it('runs a fan-out, a join and a failing rule to the end, with no adapter', async () => {
    writeFileSync(join(work, 'Snakefile'), SNAKEFILE);
    const commands = recipe(`${quote(process.execPath)} ${quote(CLI_BIN)}`);
    const child = spawn(
      'snakemake',
      [
        '--jobs',
        '4',
        '--keep-going',
        '--latency-wait',
        '0',
        '--cluster',
        commands.cluster,
        '--cluster-status',
        commands.status,
        '--cluster-cancel',
        commands.cancel,
      ],
      { cwd: work, env: cliEnv(state), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const result = await collectProcess(child);
    const log = `${result.stdout}${result.stderr}`;
    expect(result.code, log).toBe(1);
    expect(log).toContain('Error executing rule broken on cluster');
    expect(readFileSync(join(work, 'joined.txt'), 'utf8')).toBe('part 1\npart 2\npart 3\n');
    expect(existsSync(join(work, 'broken.txt'))).toBe(false);
    const states = (
      await runCli(['list', '--all', '--no-refresh', '--format', '{state}'], { state })
    ).stdout
      .trim()
      .split('\n')
      .sort();
    expect(states).toEqual(['failed', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
  }, 240_000);
});
