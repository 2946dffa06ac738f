/** The examples of a page in docs/: each `sh` block run as written with the built CLI, and the `text` block after it, what it must print. */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPOSITORY_ROOT } from './repository.js';
import { CLI_BIN } from './run-cli.js';

/** Each runnable block (`sh`) of `docs/<page>` with the output the page says it prints. */
export function docExamples(page: string): { script: string; output: string }[] {
  const text = readFileSync(join(REPOSITORY_ROOT, 'docs', page), 'utf8');
  return [...text.matchAll(/```sh\n([\s\S]*?)```\s*\n```text\n([\s\S]*?)```/g)].map((match) => ({
    script: match[1] as string,
    output: match[2] as string,
  }));
}

/** A place to run a page's examples: a work directory, a ledger, `yonder` on PATH. */
export interface DocSandbox {
  /** Run one example with bash (`-euo pipefail`), in the work directory, without colour. */
  run(script: string): { stdout: string; stderr: string };
  remove(): void;
}

export function docSandbox(name: string): DocSandbox {
  const work = mkdtempSync(join(tmpdir(), `yonder-${name}-doc-`));
  const bin = mkdtempSync(join(tmpdir(), `yonder-${name}-bin-`));
  const state = mkdtempSync(join(tmpdir(), `yonder-${name}-state-`));
  writeFileSync(join(bin, 'yonder'), `#!/bin/sh\nexec '${process.execPath}' '${CLI_BIN}' "$@"\n`);
  chmodSync(join(bin, 'yonder'), 0o755);
  return {
    run(script) {
      const result = spawnSync(
        'bash',
        ['--norc', '--noprofile', '-euo', 'pipefail', '-c', script],
        {
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
        },
      );
      return { stdout: result.stdout, stderr: result.stderr };
    },
    remove() {
      for (const dir of [work, bin, state]) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The command backend's toy queue (packages/backend-command/examples/toyq) as `profile add` flags. */
export function toyqProfileFlags(workdir: string): string[] {
  const toyq = join(REPOSITORY_ROOT, 'packages/backend-command/examples/toyq');
  return [
    '--backend',
    'command',
    '--workdir',
    workdir,
    '--set',
    `submit=${toyq}/toyq-submit {script}`,
    '--set',
    'idPattern=Job (?<id>\\d+) queued',
    '--set',
    `status=${toyq}/toyq-status {external_ids}`,
    '--set',
    `cancel=${toyq}/toyq-cancel {external_ids}`,
  ];
}
