/** Issue 24 item 3, through the real CLI on a real full file system (a tmpfs of 1 MiB; the tests run as root, as the shared-machine ones do): a job whose own log fills the disk under its job directory keeps its true exit status, and the first list after works although it cannot write its lease. */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, runCli, runCliJson } from '@yonder/test-helpers';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let root: string;
let state: string;

beforeAll(() => requireCliBuild());
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'yonder-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', root]);
  state = join(root, 'state');
  mkdirSync(state, { mode: 0o700 });
});
afterEach(() => {
  spawnSync('umount', ['-l', root]);
  rmSync(root, { recursive: true, force: true });
});

describe('a job that fills the disk of its job directory', () => {
  for (const code of [0, 7]) {
    it(`keeps its exit status (${code}); list and status work on the full disk`, async () => {
      const submitted = await runCli(
        ['submit', '--', 'sh', '-c', `head -c 3000000 /dev/zero; exit ${code}`],
        { state, cwd: root },
      );
      expect(submitted.code, submitted.stderr).toBe(0);
      const id = submitted.stdout.trim();
      const waited = await runCli(['wait', id, '--timeout', '120'], { state, cwd: root });
      expect(statfsSync(root).bavail * statfsSync(root).bsize).toBeLessThan(64 * 1024);
      expect(waited.stderr).not.toContain('ENOSPC');
      expect(waited.code, waited.stdout + waited.stderr).toBe(code);
      const list = await runCli(['list'], { state, cwd: root });
      expect(list.code, list.stderr).toBe(0);
      const status = await runCliJson(['status', id], { state, cwd: root });
      expect(status.doc.result[0]).toMatchObject({
        state: code === 0 ? 'succeeded' : 'failed',
        exitCode: code,
      });
    }, 180_000);
  }
});
