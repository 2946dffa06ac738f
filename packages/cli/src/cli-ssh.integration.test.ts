import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, runCli, sshHostsEnv, untilJobGone } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let sshConfig: string;

function yonder(args: string[]) {
  return runCli(args, { state });
}

/** `yonder profile add NAME --backend ssh --host HOST` with the test hosts' ssh config. */
function addProfile(name: string, host: string, ...extra: string[]) {
  return yonder([
    'profile',
    'add',
    name,
    '--backend',
    'ssh',
    '--host',
    host,
    '--ssh-config',
    sshConfig,
    ...extra,
  ]);
}

beforeAll(() => {
  requireCliBuild();
  sshConfig = sshHostsEnv().YONDER_SSH_CONFIG as string;
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-ssh-'));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
});

describe('yonder with an SSH workstation profile whose host is a Host alias', () => {
  it('profile add → check → submit → wait → logs → cancel', async () => {
    const add = await addProfile('box', 'target');
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
    // The host is this machine: the job's processes there are gone, not only its record.
    const status = JSON.parse((await yonder(['status', long, '--json'])).stdout);
    await untilJobGone(status.result[0].data.pid);

    const unknown = await addProfile('stranger', 'target-unknown');
    expect(unknown.code).toBe(0);
    const refused = await yonder(['submit', '--profile', 'stranger', '--', 'true']);
    expect(refused.code).toBe(1);
    // ssh2: "host key of yonder-test@127.0.0.1:2201 (target-unknown) is unknown"; openssh: ssh's words.
    expect(refused.stderr).toMatch(/host key of .*target-unknown/);
    expect((await yonder(['profile', 'add', 'nohost', '--backend', 'ssh'])).stderr).toContain(
      'host: the ssh backend needs a host',
    );
  }, 120_000);

  it('keeps using a profile an older version stored with its settings in an ssh field', async () => {
    const add = await addProfile('old', 'target', '--max-channels', '4');
    expect(add.code, add.stderr).toBe(0);
    const file = join(state, 'profiles', 'old.json');
    const { transportOptions, ...rest } = JSON.parse(readFileSync(file, 'utf8'));
    expect(transportOptions).toEqual({ config: sshConfig, maxChannels: 4 });
    writeFileSync(file, JSON.stringify({ ...rest, ssh: transportOptions }));
    const show = await yonder(['profile', 'show', 'old', '--json']);
    expect(JSON.parse(show.stdout).result).toEqual({ ...rest, transportOptions });
    const check = await yonder(['profile', 'check', 'old']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const id = (await yonder(['submit', '--profile', 'old', '--', 'echo', 'still'])).stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(0);
    expect((await yonder(['logs', id])).stdout).toBe('still\n');
  }, 120_000);
});
