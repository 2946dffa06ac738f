/** The examples in docs/pipelines.md run as written with the built CLI on this machine: each `sh` block prints the `text` block after it. */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/cli/dist/bin.js');
let work: string;
let bin: string;
let state: string;

/** Each runnable block (`sh`) with the output the page says it prints (the `text` block after it). */
function examples(): { script: string; output: string }[] {
  const text = readFileSync(join(ROOT, 'docs', 'pipelines.md'), 'utf8');
  return [...text.matchAll(/```sh\n([\s\S]*?)```\s*\n```text\n([\s\S]*?)```/g)].map((match) => ({
    script: match[1] as string,
    output: match[2] as string,
  }));
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'yonder-pipelines-doc-'));
  bin = mkdtempSync(join(tmpdir(), 'yonder-pipelines-bin-'));
  state = mkdtempSync(join(tmpdir(), 'yonder-pipelines-state-'));
  writeFileSync(join(bin, 'yonder'), `#!/bin/sh\nexec '${process.execPath}' '${CLI}' "$@"\n`);
  chmodSync(join(bin, 'yonder'), 0o755);
});

afterAll(() => {
  for (const dir of [work, bin, state]) rmSync(dir, { recursive: true, force: true });
});

it('has its examples, each followed by what it prints', () => {
  expect(examples()).toHaveLength(2);
});

it('each example prints what the page says', () => {
  for (const { script, output } of examples()) {
    const result = spawnSync('bash', ['--norc', '--noprofile', '-euo', 'pipefail', '-c', script], {
      cwd: work,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`,
        HOME: work,
        YONDER_STATE_DIR: state,
        XDG_CONFIG_HOME: join(state, '.no-config'),
        NO_COLOR: '1',
      },
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(output);
  }
}, 300_000);
