import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './test-support/run-cli.js';

const HOSTS = new URL('../../../scripts/sshd-hosts.sh', import.meta.url).pathname;
let state: string;
let sshConfig: string;

function yonder(args: string[]) {
  return runCli(args, { YONDER_STATE_DIR: state, SSH_AUTH_SOCK: '' });
}

beforeAll(() => {
  try {
    execFileSync('bash', [HOSTS, 'status'], { stdio: 'ignore' });
  } catch {
    throw new Error('The sshd test hosts are not running: bash scripts/sshd-hosts.sh start');
  }
  sshConfig = /export YONDER_SSH_CONFIG='([^']+)'/.exec(
    execFileSync('bash', [HOSTS, 'env'], { encoding: 'utf8' }),
  )?.[1] as string;
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-ssh-'));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
});

describe('yonder with an SSH workstation profile whose host is a Host alias', () => {
  it('profile add → check → submit → wait → logs → cancel', async () => {
    const add = await yonder([
      'profile',
      'add',
      'box',
      '--backend',
      'ssh',
      '--host',
      'target',
      '--ssh-config',
      sshConfig,
    ]);
    expect(add.code, add.stderr).toBe(0);
    const check = await yonder(['profile', 'check', 'box']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain('home = "/home/yonder-test"');

    const submit = await yonder([
      'submit',
      '--profile',
      'box',
      '--',
      'sh',
      '-c',
      'echo "$(id -un) got: $1"; exit 4',
      'sh',
      "$(rm -rf /) 'q'",
    ]);
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(4);
    expect((await yonder(['logs', id])).stdout).toBe("yonder-test got: $(rm -rf /) 'q'\n");
    const long = (await yonder(['submit', '--profile', 'box', '--', 'sleep', '300'])).stdout.trim();
    const cancel = await yonder(['cancel', long]);
    expect(cancel.stdout).toContain(`${long} cancelled`);

    const unknown = await yonder([
      'profile',
      'add',
      'stranger',
      '--backend',
      'ssh',
      '--host',
      'target-unknown',
      '--ssh-config',
      sshConfig,
    ]);
    expect(unknown.code).toBe(0);
    const refused = await yonder(['submit', '--profile', 'stranger', '--', 'true']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'host key of yonder-test@127.0.0.1:2201 (target-unknown) is unknown',
    );
    expect((await yonder(['profile', 'add', 'nohost', '--backend', 'ssh'])).stderr).toContain(
      'host: the ssh backend needs a host',
    );
  }, 120_000);
});
