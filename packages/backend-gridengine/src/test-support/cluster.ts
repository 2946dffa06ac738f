/** Helpers for the tests against the one-node Grid Engine of scripts/gridengine-cluster.sh: is it up (fail, never skip), a work directory. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The repository's script that starts the test cluster. */
export const GRIDENGINE_SCRIPT = resolve(
  import.meta.dirname,
  '../../../../scripts/gridengine-cluster.sh',
);

/** Fail (never skip) when the Grid Engine test cluster is down, naming the command that starts it. */
export function requireGridEngine(): void {
  const status = spawnSync('bash', [GRIDENGINE_SCRIPT, 'status'], {
    stdio: 'ignore',
    env: { ...process.env, YONDER_GRIDENGINE_QUIET: '1' },
    timeout: 60_000,
  }).status;
  if (status !== 0)
    throw new Error(
      'The Grid Engine test cluster is not running. Start it as root with: bash scripts/gridengine-cluster.sh start',
    );
}

/** A fresh, world-traversable work directory whose name has spaces, quotes and a `;`. */
export function workdir(): string {
  const base = mkdtempSync(join(tmpdir(), "yonder ge 'work' "));
  return join(base, 'jobs; not run');
}
