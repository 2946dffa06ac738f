import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  requireCliBuild,
  requireGridEngine,
  runCli,
  sshHostsEnv,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let sshConfig: string;

function yonder(args: string[]) {
  return runCli(args, { state });
}

beforeAll(() => {
  requireCliBuild();
  requireGridEngine();
  sshConfig = sshHostsEnv().YONDER_SSH_CONFIG as string;
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-gridengine-'));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
});

describe('yonder with a Grid Engine profile on a submit host over SSH (the bundled @yonder/backend-gridengine)', () => {
  it('profile add → check → submit → wait → logs → cancel, as the ssh user', async () => {
    const add = await yonder([
      'profile',
      'add',
      'ge',
      '--backend',
      'gridengine',
      '--host',
      'target',
      '--ssh-config',
      sshConfig,
      '--set',
      'parallelEnvironment=smp',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const check = await yonder(['profile', 'check', 'ge']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(/gridEngineVersion = "SGE 8\.1\.\d+"/);
    expect(check.stdout).toContain('accounting = true');
    expect(check.stdout).toContain('home = "/home/yonder-test"');

    const submit = await yonder([
      'submit',
      '--profile',
      'ge',
      '--cpus',
      '2',
      '--env',
      "V=$(rm -rf /) 'q'\nx",
      '--',
      'sh',
      '-c',
      'printf "%s got: %s|%s|%s\\n" "$(id -un)" "$1" "$V" "$NSLOTS"; exit 4',
      'sh',
      "-$(rm -rf /) 'q'\n;",
    ]);
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '90'])).code).toBe(4);
    expect((await yonder(['logs', id])).stdout).toBe(
      "yonder-test got: -$(rm -rf /) 'q'\n;|$(rm -rf /) 'q'\nx|2\n",
    );
    const status = JSON.parse((await yonder(['status', id, '--json'])).stdout);
    expect(status.result[0]).toMatchObject({
      state: 'failed',
      exitCode: 4,
      nativeState: 'failed 0, exit_status 4',
    });

    const long = (await yonder(['submit', '--profile', 'ge', '--', 'sleep', '300'])).stdout.trim();
    await until(
      async () =>
        JSON.parse((await yonder(['status', long, '--json'])).stdout).result[0].state === 'running',
      60_000,
      'the long job to run',
      500,
    );
    const cancel = await yonder(['cancel', long]);
    expect(cancel.stdout).toContain(`${long} cancelled`);
  }, 180_000);
});
