/**
 * A control directory the openssh transport cannot write (issue 24 item 21): on a read-only
 * file system, made already or still to be made. The command says which directory and what
 * will work, before ssh logs in — not ssh's `unix_listener: cannot bind` after a login, nor a
 * raw `EROFS … mkdir`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, requireSshHosts, runCli, sshHostsEnv } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let mount: string;
let mounted = false;

beforeAll(() => {
  requireCliBuild();
  requireSshHosts();
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-rofs-'));
  // Short: a socket path in it must fit in 104 bytes.
  mount = mkdtempSync('/tmp/yro-');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mount]);
  mounted = true;
  mkdirSync(join(mount, 'made', 'yonder'), { recursive: true, mode: 0o700 });
  mkdirSync(join(mount, 'fresh'), { mode: 0o700 });
  execFileSync('mount', ['-o', 'remount,ro', mount]);
});

afterAll(() => {
  if (mounted) execFileSync('umount', [mount]);
  rmSync(mount, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

describe('a control directory on a read-only file system', () => {
  it('is named, with what will work, before anything logs in', async () => {
    const add = await runCli(
      [
        'profile',
        'add',
        'box',
        '--backend',
        'ssh',
        '--host',
        'target',
        '--ssh-config',
        sshHostsEnv().YONDER_SSH_CONFIG as string,
        '--transport',
        'openssh',
      ],
      { state },
    );
    expect(add.code, add.stderr).toBe(0);
    for (const runtime of ['made', 'fresh']) {
      const env = { XDG_RUNTIME_DIR: join(mount, runtime) };
      const submitted = await runCli(['submit', '--profile', 'box', '--json', '--', 'true'], {
        state,
        env,
      });
      expect(submitted.code).toBe(1);
      const error = JSON.parse(submitted.stdout).error;
      expect(error.message).toContain(
        `The ssh control directory ${join(mount, runtime, 'yonder')} cannot be written (EROFS: a read-only file system)`,
      );
      expect(error.message).toContain(
        `Fix: make XDG_RUNTIME_DIR (${join(mount, runtime)}) a directory only you can write, that can be written (as /run/user/0 is), or unset it`,
      );
      const check = await runCli(['profile', 'check', 'box'], { state, env });
      expect(check.code).toBe(1);
      expect(check.stdout + check.stderr).toContain('cannot be written (EROFS');
    }
  }, 120_000);
});
