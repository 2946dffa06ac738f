/** yonder against a real sshd that asks for a second factor (publickey, then a TOTP code through PAM): one login by `yonder connect`, every other command over its master with no new login. */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, runCli, sshHostsEnv, until, untilJobGone } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let runtime: string;
let hosts: Record<string, string>;

function yonder(args: string[], env: Record<string, string> = {}) {
  return runCli(args, { state, env: { XDG_RUNTIME_DIR: runtime, ...env } });
}

/** The logins the twofa host accepted so far (its log has one line per completed second factor). */
function logins(): number {
  const log = hosts.YONDER_SSH_LOG_TWOFA as string;
  if (!existsSync(log)) return 0;
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.includes('Accepted keyboard-interactive/pam')).length;
}

beforeAll(() => {
  requireCliBuild();
  hosts = sshHostsEnv();
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-2fa-'));
  runtime = mkdtempSync(join(tmpdir(), 'yr-'));
});

afterAll(async () => {
  await yonder(['disconnect', 'tfa']);
  rmSync(state, { recursive: true, force: true });
  rmSync(runtime, { recursive: true, force: true });
});

describe('a host that asks for a second factor, through the openssh transport', () => {
  it('fails at once before "yonder connect", then logs in once for every command after it', async () => {
    const add = await yonder([
      'profile',
      'add',
      'tfa',
      '--backend',
      'ssh',
      '--host',
      'twofa',
      '--ssh-config',
      hosts.YONDER_SSH_CONFIG_LOGIN as string,
      '--transport',
      'openssh',
      '--cancel-grace',
      '1',
    ]);
    expect(add.code, add.stderr).toBe(0);

    // No master: BatchMode stops at the second factor, at once, and says what to do.
    const before = logins();
    const started = Date.now();
    const refused = await yonder(['submit', '--profile', 'tfa', '--json', '--', 'true']);
    expect(refused.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(20_000);
    const error = JSON.parse(refused.stdout).error;
    expect(error.code).toBe('E_LOGIN_REQUIRED');
    expect(error.message).toContain('Run "yonder connect tfa" first');
    const plain = await yonder(['profile', 'check', 'tfa']);
    expect(plain.code).toBe(1);
    expect(plain.stdout + plain.stderr).toContain('Run "yonder connect tfa" first');

    // The code is answered by SSH_ASKPASS (no terminal here), as ssh's own variables say.
    const askpass = {
      SSH_ASKPASS: hosts.YONDER_SSH_ASKPASS_TOTP as string,
      SSH_ASKPASS_REQUIRE: 'force',
    };
    const connect = await yonder(['connect', 'tfa'], askpass);
    expect(connect.code, connect.stderr).toBe(0);
    expect(connect.stdout).toBe('Connected to twofa (tfa).\n');
    await until(
      () => logins() === before + 1,
      10_000,
      'the login of yonder connect in the sshd log',
    );
    expect((await yonder(['connect', 'tfa'])).stdout).toBe('Already connected to twofa (tfa).\n');

    const check = await yonder(['profile', 'check', 'tfa']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain('Route:     master = running');
    expect(check.stdout).toContain('Route:     user = yonder-2fa');
    expect(check.stdout).toContain('home = "/home/yonder-2fa"');

    const submit = async (script: string) =>
      (await yonder(['submit', '--profile', 'tfa', '--', 'sh', '-c', script])).stdout.trim();
    const id = await submit('echo "$(id -un) here"; exit 5');
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(5);
    expect((await yonder(['logs', id])).stdout).toBe('yonder-2fa here\n');
    const follow = await yonder(['logs', await submit('echo a; sleep 2; echo b'), '--follow']);
    expect(follow.stdout).toBe('a\nb\n');
    const long = await submit('exec sleep 300');
    const pid = JSON.parse((await yonder(['status', long, '--json'])).stdout).result[0].data.pid;
    expect((await yonder(['cancel', long])).stdout).toContain(`${long} cancelled`);
    await untilJobGone(pid);
    // Every one of those commands went over the master: still the one login.
    expect(logins()).toBe(before + 1);

    const disconnect = await yonder(['disconnect', 'tfa']);
    expect(disconnect.stdout).toBe('Disconnected from twofa (tfa).\n');
    // A finished job is read from the ledger; anything that needs the host asks for a connect again.
    expect((await yonder(['status', id])).code).toBe(0);
    const again = await yonder(['submit', '--profile', 'tfa', '--', 'true']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('Run "yonder connect tfa" first');
    expect((await yonder(['disconnect', 'tfa'])).stdout).toBe('Not connected to twofa (tfa).\n');
    expect(logins()).toBe(before + 1);
  }, 240_000);
});
