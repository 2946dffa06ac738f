/** yonder as a script or a workflow engine uses it: --format, -q and cancel --no-wait, through the real CLI. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processGroup, requireCliBuild, runCli, until } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let work: string;
const yonder = (args: string[]) => runCli(args, { state, cwd: work });

beforeAll(() => {
  requireCliBuild();
  state = mkdtempSync(join(tmpdir(), 'yonder-scripting-'));
  work = mkdtempSync(join(tmpdir(), 'yonder scripting '));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('for scripts', () => {
  it('--format prints the named fields, one line per job; -q the ids; a bad field is named', async () => {
    const failed = (
      await yonder(['submit', '--name', 'a;$(b) c', '--', 'sh', '-c', 'exit 3'])
    ).stdout.trim();
    expect((await yonder(['wait', failed, '--timeout', '60'])).code).toBe(3);
    const one = await yonder(['status', failed, '--format', '{state} {exitCode} {name} {error}']);
    expect(one.stdout).toBe('failed 3 a;$(b) c \n');
    const nested = await yonder(['status', failed, '--format', '{id}\\t{spec.argv}']);
    expect(nested.stdout).toBe(`${failed}\t["sh","-c","exit 3"]\n`);
    const quiet = await yonder(['list', '-q', '--no-refresh']);
    expect(quiet.stdout).toBe(`${failed}\n`);
    const bad = await yonder(['list', '--format', '{stat}']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--format: {stat} is not a field of a job');
  }, 90_000);

  it('cancel --no-wait returns at once, and the job is stopped', async () => {
    const id = (await yonder(['submit', '--', 'sleep', '300'])).stdout.trim();
    const pid = Number((await yonder(['status', id, '--format', '{externalId}'])).stdout);
    expect(pid).toBeGreaterThan(1);
    const cancel = await yonder(['cancel', '--no-wait', id]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout.startsWith(id)).toBe(true);
    await until(() => processGroup(pid).length === 0, 30_000, 'the job to be gone');
    await until(
      async () => (await yonder(['status', id, '--format', '{state}'])).stdout === 'cancelled\n',
      30_000,
      'the job to be recorded cancelled',
    );
  }, 90_000);
});
