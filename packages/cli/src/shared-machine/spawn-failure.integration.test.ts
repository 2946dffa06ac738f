/**
 * Issue 11: a failed spawn — fork refused (EAGAIN, at the user's process limit), no file
 * descriptors left (EMFILE), no such program (ENOENT) — is an error of the command, never an
 * unhandled 'error' event that ends the process. The local transport, as an unprivileged user
 * (root is exempt from the process limit).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CliResult,
  cleanupUsers,
  type InstalledCli,
  ownedDir,
  runProgramAs,
  type TestUser,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let cli: InstalledCli;
let worker: string;

const WORKER = `
import { execFileSync } from 'node:child_process';
import { openSync } from 'node:fs';
const { runLocal } = await import(process.argv[2]);
const mode = process.argv[3];
const outcome = (argv) =>
  runLocal(argv, { timeoutMs: 10_000 }).then(
    (result) => ({ ok: true, exitCode: result.exitCode }),
    (error) => ({ ok: false, name: error.name, code: error.code, message: error.message }),
  );
const results = {};
if (mode === 'nproc') {
  results.enoent = await outcome(['/nonexistent/yonder-program']);
  // From now on this process may start no other: the user's limit is one process.
  execFileSync('prlimit', ['--pid', String(process.pid), '--nproc=1:1']);
  results.refused = await outcome(['true']);
} else {
  const held = [];
  try {
    for (;;) held.push(openSync('/dev/null', 'r'));
  } catch (error) {
    results.filled = error.code;
  }
  results.refused = await outcome(['true']);
}
process.stdout.write(JSON.stringify(results));
`;

beforeAll(() => {
  ({ victim, cli } = usersWithCli());
  worker = join(ownedDir(victim, 'spawn'), 'worker.mjs');
  writeFileSync(worker, WORKER, { mode: 0o644 });
});
afterAll(() => cleanupUsers());

function coreUrl(): string {
  return `file://${join(cli.root, 'node_modules/@yonder/core/dist/backend-kit/index.js')}`;
}

/** Run the worker as the victim, under `prefix` (e.g. prlimit). */
function runWorker(prefix: string[], mode: string): Promise<CliResult> {
  return runProgramAs(victim, [...prefix, process.execPath, worker, coreUrl(), mode]);
}

describe('a spawn that fails', () => {
  it('at the user’s process limit (EAGAIN), and of a missing program (ENOENT): errors, no crash', async () => {
    const result = await runWorker([], 'nproc');
    expect(result.stderr).not.toMatch(/Unhandled 'error' event/);
    expect(result.code, result.stderr).toBe(0);
    const results = JSON.parse(result.stdout);
    expect(results.enoent).toMatchObject({ ok: false, code: 'E_COMMAND_NOT_FOUND' });
    expect(results.refused).toMatchObject({
      ok: false,
      name: 'YonderError',
      code: 'E_TRANSPORT',
      message: expect.stringMatching(/EAGAIN.*too many processes/),
    });
  }, 60_000);

  it('with no file descriptors left (EMFILE): an error, no crash', async () => {
    const result = await runWorker(['prlimit', '--nofile=64:64'], 'nofile');
    expect(result.stderr).not.toMatch(/Unhandled 'error' event|TypeError/);
    expect(result.code, result.stderr).toBe(0);
    const results = JSON.parse(result.stdout);
    expect(results.filled).toBe('EMFILE');
    expect(results.refused).toMatchObject({
      ok: false,
      code: 'E_TRANSPORT',
      message: expect.stringMatching(/EMFILE/),
    });
  }, 60_000);
});
