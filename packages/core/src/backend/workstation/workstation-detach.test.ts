/** How the workstation scripts put a job in a session of its own on a host without setsid: perl or python3, or a refusal naming what is missing, never a job a cancel cannot reach. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WORKSTATION_PROBE_SCRIPT, WORKSTATION_SUBMIT_SCRIPT } from './workstation-scripts.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-detach-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A PATH holding every program of this machine's but those `without` names (by prefix). */
function pathWithout(name: string, without: readonly string[]): string {
  const dir = join(scratch, name);
  mkdirSync(dir);
  for (const from of ['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin']) {
    if (!existsSync(from)) continue;
    for (const entry of readdirSync(from)) {
      if (without.some((prefix) => entry.startsWith(prefix)) || existsSync(join(dir, entry)))
        continue;
      symlinkSync(join(from, entry), join(dir, entry));
    }
  }
  return dir;
}

function sh(script: string, path: string, args: string[] = []) {
  return spawnSync('/bin/sh', ['-c', script, 'yonder-test', ...args], {
    encoding: 'utf8',
    env: { PATH: path, HOME: scratch },
    input: '',
  });
}

describe('detaching a job without setsid', () => {
  it('the probe names the way a job is detached, and "none" where there is none', () => {
    const perlOnly = pathWithout('perl-only', ['setsid', 'python']);
    expect(sh(WORKSTATION_PROBE_SCRIPT, perlOnly).stdout).toMatch(/^DETACH perl$/m);
    const pythonOnly = pathWithout('python-only', ['setsid', 'perl']);
    if (existsSync(join(pythonOnly, 'python3')))
      expect(sh(WORKSTATION_PROBE_SCRIPT, pythonOnly).stdout).toMatch(/^DETACH python3$/m);
    const none = pathWithout('none', ['setsid', 'perl', 'python']);
    const probe = sh(WORKSTATION_PROBE_SCRIPT, none);
    expect(probe.stdout).toMatch(/^SETSID $/m);
    expect(probe.stdout).toMatch(/^DETACH none$/m);
  });

  it('a submit on a host with none of setsid, perl or python3 is refused before anything is made', () => {
    const none = join(scratch, 'none');
    const work = join(scratch, 'work');
    const result = sh(WORKSTATION_SUBMIT_SCRIPT, none, [
      work,
      '0123456789ab',
      '0 0 0',
      '',
      '',
      '',
      '0',
      'true',
    ]);
    expect(result.status).toBe(21);
    expect(result.stderr).toContain('none of setsid, perl or python3');
    expect(existsSync(work)).toBe(false);
  });
});
