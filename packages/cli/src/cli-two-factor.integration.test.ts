/** yonder against a real sshd that asks for a second factor (publickey, then a TOTP code through PAM): one login by `yonder connect`, every other command over its master with no new login. */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLI_BIN,
  type CliResult,
  cliEnv,
  collectProcess,
  requireCliBuild,
  runCli,
  sshHostsEnv,
  until,
  untilJobGone,
} from '@yonder/test-helpers';
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

/**
 * `yonder ARGS` on a terminal (script(1) gives it one; nothing is typed): ended by the test
 * only if it still runs after 90 s, which `signal` then says.
 */
async function onTerminal(args: string[]): Promise<CliResult> {
  const quoted = [process.execPath, CLI_BIN, ...args].map(
    (arg) => `'${arg.replaceAll("'", "'\\''")}'`,
  );
  const child = spawn('script', ['-qec', quoted.join(' '), '/dev/null'], {
    cwd: state,
    env: cliEnv(state, { XDG_RUNTIME_DIR: runtime }),
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const timer = setTimeout(() => process.kill(-(child.pid as number), 'SIGKILL'), 90_000);
  try {
    return await collectProcess(child);
  } finally {
    clearTimeout(timer);
  }
}

/** An ssh config of the test's own: `text` after an Include of the test hosts' login config. */
function sshConfig(name: string, text: string): string {
  const file = join(runtime, `${name}.config`);
  writeFileSync(file, `Include ${hosts.YONDER_SSH_CONFIG_LOGIN}\n\n${text}`, { mode: 0o600 });
  return file;
}

afterAll(async () => {
  await yonder(['disconnect', 'tfa']);
  await yonder(['disconnect', 'jump2fa']);
  await yonder(['disconnect', 'own']);
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

describe('a jump host that asks for a second factor, with no master yet (issue 24 item 19)', () => {
  it('fails at once off a terminal and on one, asking for yonder connect; works after it', async () => {
    const config = sshConfig(
      'via-twofa',
      [
        'Host via-twofa',
        '  HostName 127.0.0.1',
        `  Port ${hosts.YONDER_SSH_PORT_TARGET}`,
        '  User yonder-test',
        '  IdentitiesOnly yes',
        `  IdentityFile ${hosts.YONDER_SSH_KEY}`,
        `  UserKnownHostsFile ${hosts.YONDER_SSH_KNOWN_HOSTS}`,
        '  GlobalKnownHostsFile /dev/null',
        '  StrictHostKeyChecking yes',
        '  ProxyJump twofa',
        '',
      ].join('\n'),
    );
    const add = await yonder([
      'profile',
      'add',
      'jump2fa',
      '--backend',
      'ssh',
      '--host',
      'via-twofa',
      '--ssh-config',
      config,
      '--transport',
      'openssh',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const before = logins();
    // OpenSSH starts the jump host's ssh without BatchMode: it must still never ask.
    const refused = await yonder(['submit', '--profile', 'jump2fa', '--json', '--', 'true']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).error.code).toBe('E_LOGIN_REQUIRED');
    expect(JSON.parse(refused.stdout).error.message).toContain(
      'Run "yonder connect jump2fa" first',
    );
    const terminal = await onTerminal(['profile', 'check', 'jump2fa']);
    expect(terminal.signal, terminal.stdout).toBeNull();
    expect(terminal.code, terminal.stdout).toBe(1);
    expect(terminal.stdout).toContain('Run "yonder connect jump2fa" first');
    expect(terminal.stdout).not.toContain('Verification code');
    expect(logins()).toBe(before);

    const connect = await yonder(['connect', 'jump2fa'], {
      SSH_ASKPASS: hosts.YONDER_SSH_ASKPASS_TOTP as string,
      SSH_ASKPASS_REQUIRE: 'force',
    });
    expect(connect.code, connect.stderr).toBe(0);
    await until(() => logins() === before + 1, 10_000, 'the jump host’s login in its sshd log');
    const id = (
      await yonder(['submit', '--profile', 'jump2fa', '--', 'sh', '-c', 'id -un'])
    ).stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(0);
    expect((await yonder(['logs', id])).stdout).toBe('yonder-test\n');
    expect(logins()).toBe(before + 1);
    expect((await yonder(['disconnect', 'jump2fa'])).code).toBe(0);
  }, 240_000);
});

describe('the user’s own ControlMaster yes and ControlPath (issue 24 item 20)', () => {
  it('connect logs in once; commands, check and disconnect use that master and never log in or ask', async () => {
    const sockets = mkdtempSync('/tmp/ycm-');
    const config = sshConfig(
      'own-master',
      [
        'Host own-master',
        '  HostName 127.0.0.1',
        `  Port ${hosts.YONDER_SSH_PORT_TWOFA}`,
        `  User ${hosts.YONDER_SSH_TWOFA_USER}`,
        '  IdentitiesOnly yes',
        `  IdentityFile ${hosts.YONDER_SSH_KEY}`,
        `  UserKnownHostsFile ${hosts.YONDER_SSH_KNOWN_HOSTS_LOGIN}`,
        '  GlobalKnownHostsFile /dev/null',
        '  StrictHostKeyChecking yes',
        '  ControlMaster yes',
        `  ControlPath ${sockets}/cm-%C`,
        '',
      ].join('\n'),
    );
    const add = await yonder([
      'profile',
      'add',
      'own',
      '--backend',
      'ssh',
      '--host',
      'own-master',
      '--ssh-config',
      config,
      '--transport',
      'openssh',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const askpass = {
      SSH_ASKPASS: hosts.YONDER_SSH_ASKPASS_TOTP as string,
      SSH_ASKPASS_REQUIRE: 'force',
    };
    const before = logins();
    // The check for a master must not log in itself (through the askpass it is given).
    const connect = await yonder(['connect', 'own'], askpass);
    expect(connect.code, connect.stderr).toBe(0);
    expect(connect.stdout).toBe('Connected to own-master (own).\n');
    await until(() => logins() === before + 1, 10_000, 'the login of yonder connect');
    expect((await yonder(['connect', 'own'], askpass)).stdout).toBe(
      'Already connected to own-master (own).\n',
    );
    const id = (
      await yonder(['submit', '--profile', 'own', '--', 'sh', '-c', 'exit 4'])
    ).stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(4);
    const check = await onTerminal(['profile', 'check', 'own']);
    expect(check.signal, check.stdout).toBeNull();
    expect(check.code, check.stdout).toBe(0);
    expect(check.stdout).toContain('master = running');
    expect(logins()).toBe(before + 1);
    const disconnect = await onTerminal(['disconnect', 'own']);
    expect(disconnect.signal, disconnect.stdout).toBeNull();
    expect(disconnect.stdout).toContain('Disconnected from own-master (own).');
    const again = await onTerminal(['disconnect', 'own']);
    expect(again.signal, again.stdout).toBeNull();
    expect(again.stdout).toContain('Not connected to own-master (own).');
    expect(logins()).toBe(before + 1);
    rmSync(sockets, { recursive: true, force: true });
  }, 240_000);
});
