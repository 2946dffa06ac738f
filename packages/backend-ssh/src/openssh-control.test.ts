/** The openssh transport's ssh side against the real ssh: the ControlPath it picks or keeps, its private directory, and ssh's failures put into words. */
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  controlArguments,
  controlDirectory,
  loginError,
  parseResolved,
  resolveWithSsh,
} from './openssh-control.js';

// Short: a socket path in it must fit in 104 bytes.
const scratch = mkdtempSync('/tmp/yc-');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const ssh = { program: 'ssh', env: { ...process.env, XDG_RUNTIME_DIR: scratch } };

function config(name: string, text: string): string {
  const file = join(scratch, name);
  writeFileSync(file, text);
  return file;
}

describe('the master connection’s options, from what ssh -G says', () => {
  it('puts the ControlPath in a private directory by %C and a key of alias and config', async () => {
    const file = config('plain', 'Host box\n  HostName 127.0.0.1\n  User me\n');
    const user = await resolveWithSsh(ssh, ['-F', file], 'box');
    expect(user.get('user')).toEqual(['me']);
    const args = controlArguments('box', user, { config: file }, ssh.env);
    expect(args).toContain('ControlMaster=auto');
    expect(args).toContain('ControlPersist=600');
    const path = args.find((arg) => arg.startsWith('ControlPath='))?.slice('ControlPath='.length);
    expect(path).toMatch(new RegExp(`^${scratch}/yonder/[0-9a-f]{12}-%C$`));
    expect(statSync(join(scratch, 'yonder')).mode & 0o777).toBe(0o700);
    const other = controlArguments('box2', user, { config: file }, ssh.env);
    expect(other.find((arg) => arg.startsWith('ControlPath='))).not.toBe(`ControlPath=${path}`);
    // The expanded path is short enough for a socket.
    const resolved = await resolveWithSsh(ssh, ['-F', file, ...args], 'box');
    expect((resolved.get('controlpath')?.[0] ?? '').length).toBeLessThan(104 - 17);
  });

  it('keeps the user’s own ControlPath, ControlMaster, ControlPersist, ServerAliveInterval and ConnectTimeout', async () => {
    const file = config(
      'own',
      'Host box\n  HostName 127.0.0.1\n  ControlMaster autoask\n  ControlPath ~/.ssh/cm-%C\n  ControlPersist 1h\n  ServerAliveInterval 5\n  ConnectTimeout 7\n',
    );
    const user = await resolveWithSsh(ssh, ['-F', file], 'box');
    expect(controlArguments('box', user, { config: file }, ssh.env)).toEqual([]);
    // A persist time the profile sets wins over the config's.
    expect(
      controlArguments('box', user, { config: file, controlPersistSeconds: 30 }, ssh.env),
    ).toEqual(['-o', 'ControlPersist=30']);
  });

  it('waits 20 s for a host that does not answer, as the ssh2 transport, when the config sets no ConnectTimeout', async () => {
    const file = config('connect', 'Host box\n  HostName 127.0.0.1\n');
    const args = controlArguments(
      'box',
      await resolveWithSsh(ssh, ['-F', file], 'box'),
      {},
      ssh.env,
    );
    expect(args).toContain('ConnectTimeout=20');
  });

  it('makes the user’s own ControlMaster yes auto: a command uses the master up, never tries to be one', async () => {
    for (const [own, ours] of [
      ['yes', 'ControlMaster=auto'],
      ['ask', 'ControlMaster=autoask'],
      ['no', 'ControlMaster=auto'],
    ] as const) {
      const file = config(`master-${own}`, `Host box\n  ControlMaster ${own}\n`);
      const user = await resolveWithSsh(ssh, ['-F', file], 'box');
      expect(controlArguments('box', user, { config: file }, ssh.env)).toContain(ours);
    }
  });

  it('refuses the user’s ControlPath in a directory others can write, and a directory at it, naming the fix', async () => {
    const shared = mkdtempSync(join(scratch, 's'));
    chmodSync(shared, 0o1777);
    const inShared = config('shared', `Host box\n  ControlPath ${shared}/cm-%C\n`);
    const user = await resolveWithSsh(ssh, ['-F', inShared], 'box');
    expect(() => controlArguments('box', user, {}, ssh.env)).toThrow(
      /Refusing the directory of your ssh ControlPath .* is writable by .*ControlPath ~\/\.ssh\/cm-%C/,
    );
    const own = mkdtempSync(join(scratch, 'o'));
    const atIt = config('dir-at', `Host box\n  ControlPath ${own}/cm\n`);
    mkdirSync(join(own, 'cm'));
    const resolved = await resolveWithSsh(ssh, ['-F', atIt], 'box');
    expect(() => controlArguments('box', resolved, {}, ssh.env)).toThrow(
      `The ssh ControlPath ${own}/cm is a directory, not a socket`,
    );
  });

  it('sends keepalives every 15 s, as the ssh2 transport does, when the config asks for none', async () => {
    const file = config('alive', 'Host box\n  HostName 127.0.0.1\n  ServerAliveCountMax 2\n');
    const user = await resolveWithSsh(ssh, ['-F', file], 'box');
    expect(user.get('serveraliveinterval')).toEqual(['0']);
    const args = controlArguments('box', user, { config: file }, ssh.env);
    expect(args).toContain('ServerAliveInterval=15');
    // What ssh itself makes of them: the interval ours, the count the user's.
    const resolved = await resolveWithSsh(ssh, ['-F', file, ...args], 'box');
    expect(resolved.get('serveraliveinterval')).toEqual(['15']);
    expect(resolved.get('serveralivecountmax')).toEqual(['2']);
  });

  it('refuses a control directory another user owns, and one too long for a socket', () => {
    const runtime = mkdtempSync(join(scratch, 'r'));
    mkdirSync(join(runtime, 'yonder'), { mode: 0o700 });
    chownSync(join(runtime, 'yonder'), 54321, 54321);
    expect(() => controlDirectory({ XDG_RUNTIME_DIR: runtime })).toThrow(
      /Refusing the ssh control directory .*belongs to another user/,
    );
    // In a directory all may write, only its owner could move it: the fix says what will work.
    const sticky = mkdtempSync(join(scratch, 't'));
    chmodSync(sticky, 0o1777);
    mkdirSync(join(sticky, 'yonder'), { mode: 0o755 });
    chownSync(join(sticky, 'yonder'), 54321, 54321);
    let said = '';
    try {
      controlDirectory({ XDG_RUNTIME_DIR: sticky });
    } catch (error) {
      said = (error as Error).message;
    }
    expect(said).toContain(
      `It is in ${sticky}, where only its owner can move it. Fix: make XDG_RUNTIME_DIR (${sticky}) a directory only you can write`,
    );
    expect(said).not.toContain('mv ');
    const long = mkdtempSync(join(tmpdir(), 'yonder-a-rather-long-runtime-directory-'));
    expect(() => controlDirectory({ XDG_RUNTIME_DIR: long })).toThrow(/too long for a socket path/);
    rmSync(long, { recursive: true, force: true });
  });

  it('a missing config file is ssh’s error, named', async () => {
    await expect(resolveWithSsh(ssh, ['-F', join(scratch, 'absent')], 'box')).rejects.toThrow(
      /ssh could not read its config for box: .*absent/,
    );
  });
});

describe('ssh’s failures in words', () => {
  it('a login that needs a person is E_LOGIN_REQUIRED, with the profile', () => {
    const error = loginError(
      'hpc',
      'login.hpc',
      'me@login.hpc: Permission denied (keyboard-interactive).\n',
      255,
    );
    expect(error.code).toBe('E_LOGIN_REQUIRED');
    expect(error.data).toEqual({ profile: 'hpc', host: 'login.hpc' });
    expect(error.message).toContain('Permission denied (keyboard-interactive)');
  });

  it('a host key problem and an unreachable host are E_TRANSPORT, in ssh’s words', () => {
    expect(loginError('p', 'h', 'Host key verification failed.\n', 255).message).toBe(
      'ssh refused the host key of h: Host key verification failed.',
    );
    const down = loginError('p', 'h', 'ssh: connect to host h port 22: Connection refused\n', 255);
    expect(down.code).toBe('E_TRANSPORT');
    expect(down.message).toContain('Connection refused');
  });

  it('parses ssh -G lines, keeping every value of repeated keys', () => {
    const resolved = parseResolved('user me\nidentityfile ~/.ssh/a\nidentityfile ~/.ssh/b\n');
    expect(resolved.get('identityfile')).toEqual(['~/.ssh/a', '~/.ssh/b']);
  });
});
