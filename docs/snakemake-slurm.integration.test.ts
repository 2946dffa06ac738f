/** docs/snakemake-slurm.md as written: a real Snakemake (Debian's) runs a workflow through yonder's CLI on the Slurm profile; the steps after three short jobs start while a long one still runs; a stop cancels only what still runs. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobRecord } from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import {
  CLI_BIN,
  cliEnv,
  collectProcess,
  REPOSITORY_ROOT,
  requireCliBuild,
  requireSlurm,
  runCli,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PAGE = readFileSync(join(REPOSITORY_ROOT, 'docs', 'snakemake-slurm.md'), 'utf8');

/** The ```sh blocks of the page that name a file (`# file: <name>` on their second line). */
function scripts(): Map<string, string> {
  const files = new Map<string, string>();
  for (const block of PAGE.split('```sh\n').slice(1)) {
    const body = block.slice(0, block.indexOf('```'));
    const match = /^#!\/bin\/sh\n# file: (\S+)\n/.exec(body);
    if (match) files.set(match[1] as string, body);
  }
  return files;
}

/** The page's command line (the block that starts with `snakemake`), as sh reads it. */
function commandLine(): string {
  const start = PAGE.indexOf('```\nsnakemake ') + 4;
  return PAGE.slice(start, PAGE.indexOf('```', start)).trim();
}

const SNAKEFILE = `
rule all:
    input: expand("done/{i}.txt", i=[1, 2, 3]), "long.txt"

rule long:
    output: "long.txt"
    shell: "sleep 40; echo long > {output}"

rule short:
    output: "short/{i}.txt"
    shell: "sleep 1; echo {wildcards.i} > {output}"

rule next:
    input: "short/{i}.txt"
    output: "done/{i}.txt"
    shell: "cat {input} > {output}"
`;

let state: string;
let work: string;
let bin: string;
let snakemake: ChildProcess | undefined;

beforeAll(async () => {
  requireCliBuild();
  requireSlurm();
  try {
    execFileSync('snakemake', ['--version'], { stdio: 'pipe' });
  } catch {
    throw new Error(
      'snakemake is not installed: apt-get install -y snakemake (scripts/test-all.sh installs it)',
    );
  }
  state = mkdtempSync(join(tmpdir(), 'yonder-snakemake-state-'));
  work = mkdtempSync(join(tmpdir(), 'yonder snakemake '));
  bin = mkdtempSync(join(tmpdir(), 'yonder-snakemake-bin-'));
  // `yonder` on PATH is the built CLI.
  writeFileSync(join(bin, 'yonder'), `#!/bin/sh\nexec '${process.execPath}' '${CLI_BIN}' "$@"\n`);
  chmodSync(join(bin, 'yonder'), 0o755);
  const files = scripts();
  expect([...files.keys()]).toEqual(['yonder-snakemake-cancel']);
  for (const [name, body] of files) {
    writeFileSync(join(bin, name), body);
    chmodSync(join(bin, name), 0o755);
  }
  mkdirSync(join(work, 'jobs'));
  const add = await runCli(
    ['profile', 'add', 'hpc', '--backend', 'slurm', '--workdir', join(work, 'jobs')],
    { state, cwd: work },
  );
  expect(add.code, add.stderr).toBe(0);
  writeFileSync(join(work, 'Snakefile'), SNAKEFILE);
});

afterAll(() => {
  snakemake?.kill('SIGKILL');
});

async function ledger(): Promise<JobRecord[]> {
  const { jobs } = await createFsStore({ location: state }).listJobs({});
  return jobs;
}

const named = (jobs: JobRecord[], rule: string) => jobs.filter((job) => job.name === `smk-${rule}`);

describe('Snakemake as a client of yonder on Slurm', () => {
  it('runs the workflow: the next steps start while the long job runs; a stop cancels only it', async () => {
    const env = cliEnv(state, { PATH: `${bin}:${process.env.PATH}`, CI: 'true' });
    // sh reads the page's command line and becomes Snakemake (so a signal reaches Snakemake).
    snakemake = spawn('sh', ['-c', `exec ${commandLine()}`], {
      cwd: work,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run = collectProcess(snakemake);
    // Guards only: the assertions below are on the order of events, not on how long they took.
    // Snakemake's own status calls refresh the ledger: wait until they have seen the three next
    // steps end.
    await until(
      async () => {
        const done = named(await ledger(), 'next');
        return done.length === 3 && done.every((job) => job.state === 'succeeded');
      },
      180_000,
      'Snakemake sees the three next steps done',
      500,
    );
    expect([1, 2, 3].every((i) => existsSync(join(work, 'done', `${i}.txt`)))).toBe(true);
    const jobs = await ledger();
    const [long] = named(jobs, 'long');
    expect(named(jobs, 'short')).toHaveLength(3);
    expect(named(jobs, 'next')).toHaveLength(3);
    // Each next step ran after the short job it needs, while the long job still ran.
    expect(existsSync(join(work, 'long.txt'))).toBe(false);
    expect(long?.state).toMatch(/^(pending|running)$/);
    for (const next of named(jobs, 'next'))
      expect(next).toMatchObject({ state: 'succeeded', exitCode: 0 });
    // The k-th next step to start started after the k-th short job ended (Slurm's start times
    // are whole seconds, hence the second).
    const starts = named(jobs, 'next').map((job) => Date.parse(job.startedAt as string));
    const ends = named(jobs, 'short').map((job) => Date.parse(job.finishedAt as string));
    starts.sort((x, y) => x - y);
    ends.sort((x, y) => x - y);
    for (const [k, start] of starts.entries())
      expect(start).toBeGreaterThan((ends[k] as number) - 1_000);
    // Stop Snakemake: it cancels every job it submitted, through the page's cancel script.
    snakemake.kill('SIGINT');
    const result = await run;
    expect(result.stderr).toMatch(/Terminating processes on user request/);
    const waited = await runCli(['wait', long?.id as string, '--timeout', '120'], { state });
    const after = await ledger();
    expect(named(after, 'long')[0], waited.stdout + waited.stderr).toMatchObject({
      state: 'cancelled',
    });
    // The jobs that had ended keep their own outcome: the cancel, given every id, changed none.
    for (const job of [...named(after, 'short'), ...named(after, 'next')])
      expect(job).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect(readFileSync(join(work, 'done', '2.txt'), 'utf8')).toBe('2\n');
  }, 300_000);
});
