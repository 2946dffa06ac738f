/** The docs' Snakemake recipe (docs/snakemake.md), run by Debian's snakemake through its generic cluster executor against the built CLI on the local backend: a fan-out, a join and one failing rule; and a workflow stopped with Ctrl-C, whose running job the page's cancel script cancels. */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLI_BIN,
  cliEnv,
  collectProcess,
  requireCliBuild,
  runCli,
  runCliJson,
  until,
} from '@yonder/test-helpers';
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

const PAGE = readFileSync(new URL('../../../docs/snakemake.md', import.meta.url), 'utf8');

/** The recipe's cluster commands, as docs/snakemake.md gives them. */
function recipe(): { cluster: string; status: string; cancel: string } {
  const option = (name: string): string => {
    const start = PAGE.indexOf('snakemake --jobs');
    const block = PAGE.slice(start, PAGE.indexOf('```', start));
    const found = new RegExp(`--${name} ("(yonder [^"]+)"|\\S+)`).exec(block);
    if (!found) throw new Error(`docs/snakemake.md gives no --${name}`);
    return found[2] ?? (found[1] as string);
  };
  return {
    cluster: option('cluster'),
    status: option('cluster-status'),
    cancel: option('cluster-cancel'),
  };
}

/** The page's scripts: its ```sh blocks that name a file (`# file: <name>` on their second line). */
function scripts(): Map<string, string> {
  const files = new Map<string, string>();
  for (const block of PAGE.split('```sh\n').slice(1)) {
    const body = block.slice(0, block.indexOf('```'));
    const match = /^#!\/bin\/sh\n# file: (\S+)\n/.exec(body);
    if (match) files.set(match[1] as string, body);
  }
  return files;
}

let state: string;
let work: string;
/** A directory on PATH with `yonder` (this build) and the page's scripts. */
let bin: string;

beforeAll(() => {
  requireCliBuild();
  if (spawnSync('snakemake', ['--version']).status !== 0)
    throw new Error(
      'snakemake is missing: apt-get install -y snakemake (scripts/test-all.sh does)',
    );
  state = mkdtempSync(join(tmpdir(), 'yonder-snakemake-state-'));
  // Snakemake hands its job scripts to the cluster command through a shell, unquoted: no spaces.
  work = mkdtempSync(join(tmpdir(), 'yonder-snakemake-'));
  bin = mkdtempSync(join(tmpdir(), 'yonder-snakemake-bin-'));
  writeFileSync(join(bin, 'yonder'), `#!/bin/sh\nexec '${process.execPath}' '${CLI_BIN}' "$@"\n`);
  chmodSync(join(bin, 'yonder'), 0o755);
  for (const [name, body] of scripts()) {
    writeFileSync(join(bin, name), body);
    chmodSync(join(bin, name), 0o755);
  }
});
afterAll(() => {
  for (const dir of [state, work, bin])
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

/** Snakemake run in `dir` with the recipe's three commands, `yonder` and the scripts on PATH. */
function snakemake(dir: string, extra: string[] = []) {
  const commands = recipe();
  return spawn(
    'snakemake',
    [
      '--jobs',
      '4',
      '--keep-going',
      '--latency-wait',
      '0',
      ...extra,
      '--cluster',
      commands.cluster,
      '--cluster-status',
      commands.status,
      '--cluster-cancel',
      commands.cancel,
    ],
    {
      cwd: dir,
      env: cliEnv(state, { PATH: `${bin}:${process.env.PATH}` }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

describe('Snakemake through its generic cluster executor', () => {
  it('runs a fan-out, a join and a failing rule to the end', async () => {
    writeFileSync(join(work, 'Snakefile'), SNAKEFILE);
    const result = await collectProcess(snakemake(work));
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

  it('a workflow stopped with Ctrl-C has its running job cancelled through the cancel script', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'yonder-snakemake-stop-'));
    try {
      writeFileSync(
        join(dir, 'Snakefile'),
        'rule long:\n    output: "long.txt"\n    shell: "sleep 600; echo long > {output}"\n',
      );
      const child = snakemake(dir);
      const run = collectProcess(child);
      let long = '';
      await until(
        async () => {
          const listed = await runCliJson(['list', '--all'], { state });
          const jobs = listed.doc.result as Array<{
            id: string;
            spec: { argv: string[] };
            state: string;
          }>;
          long =
            jobs.find((job) => job.state === 'running' && job.spec.argv.join(' ').includes(dir))
              ?.id ?? '';
          return long !== '';
        },
        120_000,
        'the long job runs',
        500,
      );
      child.kill('SIGINT');
      const result = await run;
      expect(result.stderr).toMatch(/Terminating processes on user request/);
      const waited = await runCli(['wait', long, '--timeout', '120', '--json'], { state });
      const status = await runCliJson(['status', long], { state });
      expect(status.doc.result[0], waited.stdout + waited.stderr + result.stderr).toMatchObject({
        state: 'cancelled',
      });
      expect(existsSync(join(dir, 'long.txt'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    }
  }, 240_000);
});
