/** yonder against real sshd users whose login shells are not sh and whose startup files print (bash, tcsh, fish), and a user without setsid, on both ssh transports. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, runCli, sshHostsEnv, untilJobGone } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let runtime: string;
let sshConfig: string;

function yonder(args: string[], timeoutMs?: number) {
  // A control directory of this file's own: no master of another test is reused.
  return runCli(args, {
    state,
    env: { XDG_RUNTIME_DIR: runtime },
    ...(timeoutMs ? { timeoutMs } : {}),
  });
}

beforeAll(() => {
  requireCliBuild();
  sshConfig = sshHostsEnv().YONDER_SSH_CONFIG_LOGIN as string;
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-shells-'));
  runtime = mkdtempSync(join(tmpdir(), 'yr-'));
});

afterAll(async () => {
  for (const name of ['bash', 'tcsh', 'fish', 'nosetsid'])
    await yonder(['disconnect', `${name}-openssh`]);
  rmSync(state, { recursive: true, force: true });
  rmSync(runtime, { recursive: true, force: true });
});

/** Submit, wait, logs, logs --follow, cancel and profile check as `user` through `transport`. */
async function scenario(user: string, alias: string, transport: 'openssh' | 'ssh2') {
  const profile = `${alias.replace('-user', '')}-${transport}`;
  const add = await yonder([
    'profile',
    'add',
    profile,
    '--backend',
    'ssh',
    '--host',
    alias,
    '--ssh-config',
    sshConfig,
    '--transport',
    transport,
    '--cancel-grace',
    '1',
  ]);
  expect(add.code, add.stderr).toBe(0);

  const check = await yonder(['profile', 'check', profile]);
  expect(check.code, check.stdout + check.stderr).toBe(0);
  // The startup file's words are not taken for the answer.
  expect(check.stdout).toContain(`home = "/home/${user}"`);
  expect(check.stdout).not.toContain('Welcome');
  expect(check.stdout).toContain(`Route:     transport = ${transport}`);
  // Without setsid on PATH the job gets its own session through perl's setsid(2).
  expect(check.stdout).toContain(`detach = "${user === 'yonder-nosetsid' ? 'perl' : 'setsid'}"`);
  if (transport === 'openssh') {
    expect(check.stdout).toContain(`Route:     user = ${user}`);
    expect(check.stdout).toContain('Route:     port = 2205');
  } else {
    const connect = await yonder(['connect', profile]);
    expect(connect.code).toBe(1);
    expect(connect.stderr).toContain('uses the ssh transport, which keeps no login to open');
  }

  /** Submit `sh -c SCRIPT sh ARGS…`: the job's id. */
  const submitSh = async (script: string, ...args: string[]): Promise<string> => {
    const submit = await yonder([
      'submit',
      '--profile',
      profile,
      '--',
      'sh',
      '-c',
      script,
      'sh',
      ...args,
    ]);
    expect(submit.code, submit.stderr).toBe(0);
    return submit.stdout.trim();
  };
  const hostile = '$(echo no) \'q\' "dq" `x` ; new\nline';
  const id = await submitSh('echo "$(id -un) got: $1"; echo to-stderr >&2; exit 3', hostile);
  const wait = await yonder(['wait', id, '--timeout', '60']);
  expect(wait.code, wait.stderr).toBe(3);
  const logs = await yonder(['logs', id]);
  expect(logs.stdout).toBe(`${user} got: ${hostile}\nto-stderr\n`);

  const follow = await yonder(
    ['logs', await submitSh('echo one; sleep 2; echo two'), '--follow'],
    60_000,
  );
  expect(follow.code, follow.stderr).toBe(0);
  expect(follow.stdout).toBe('one\ntwo\n');

  const long = await submitSh('exec sleep 300');
  const started = JSON.parse((await yonder(['status', long, '--json'])).stdout).result[0];
  const cancel = await yonder(['cancel', long]);
  expect(cancel.code, cancel.stderr).toBe(0);
  expect(cancel.stdout).toContain(`${long} cancelled`);
  // The host is this machine: the job's processes are gone, not only its record.
  await untilJobGone(started.data.pid);
}

const USERS = [
  ['bash with a .bashrc that prints', 'yonder-bash', 'bash-user'],
  ['tcsh with a .tcshrc that prints', 'yonder-tcsh', 'tcsh-user'],
  ['fish with a config.fish that prints', 'yonder-fish', 'fish-user'],
  ['a host where setsid is not on PATH', 'yonder-nosetsid', 'nosetsid-user'],
] as const;

describe.each(['openssh', 'ssh2'] as const)('login shells through %s', (transport) => {
  it.each(USERS)('%s', (_, user, alias) => scenario(user, alias, transport), 180_000);
});
