/**
 * Issue 11, through `PATH`: a victim whose `PATH` holds an entry that names no fixed directory
 * (`.`, an empty entry such as a stray `:`, or a relative one), working in a directory another
 * user can write. Every program yonder starts by name (its own `sh` and the tools its scripts
 * call, `ssh`, an editor) would be found in the working directory first: the attacker's. yonder
 * looks programs up only in the absolute entries, for itself and for the jobs it starts.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  CLI_BIN,
  cleanupUsers,
  ownedDir,
  requireCliBuild,
  requireUsers,
  rootDir,
  runAs,
  type TestUser,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;

beforeAll(() => {
  requireCliBuild();
  ({ victim, attacker } = requireUsers());
});
afterAll(() => cleanupUsers());

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Programs yonder and its scripts start by name, and a job's commands. */
const PLANTED = ['sh', 'bash', 'find', 'stat', 'id', 'mkdir', 'setsid', 'cat', 'date', 'kill'];
PLANTED.push('ps', 'getent', 'awk', 'readlink', 'rm', 'mv', 'sleep', 'env', 'timeout', 'ssh');
PLANTED.push('true', 'echo', 'vi', 'nano', 'sensible-editor', 'tail', 'head', 'sed', 'grep');

/**
 * The attacker's directory, sticky and open to all as /tmp is, holding a program of theirs for
 * each name: it leaves a mark naming who ran it, then does what the real one does.
 */
function plantedDirectory(marks: string): string {
  const shared = rootDir('search-path', 0o1777);
  mkdirSync(join(shared, 'tools'));
  for (const name of PLANTED.flatMap((program) => [program, join('tools', program)])) {
    const path = join(shared, name);
    writeFileSync(
      path,
      `#!/bin/sh\n: > ${marks}/ran-${basename(name)}-$(/usr/bin/id -un)\nfor d in /usr/bin /bin; do [ -x "$d/${basename(name)}" ] && exec "$d/${basename(name)}" "$@"; done\n`,
    );
    chmodSync(path, 0o755);
  }
  execFileSync('chown', [
    '-R',
    `${attacker.uid}:${attacker.gid}`,
    ...readdirSync(shared).map((name) => join(shared, name)),
  ]);
  return shared;
}

/** `yonder ARGS` as the victim in `cwd`, on the ledger `state`, with `env` besides. */
function victimIn(cwd: string, state: string, env: Record<string, string>) {
  return (args: readonly string[]) =>
    runAs(victim, CLI_BIN, args, {
      cwd,
      env: { YONDER_STATE_DIR: state, XDG_CONFIG_HOME: join(state, '.no-config'), ...env },
    });
}

describe('a PATH entry that names no fixed directory, in a directory the attacker writes', () => {
  it.each([
    { entry: '.', path: `.:${SYSTEM_PATH}` },
    { entry: 'an empty one', path: `:${SYSTEM_PATH}` },
    { entry: 'a relative one', path: `tools:${SYSTEM_PATH}` },
    // Nothing absolute left: an empty PATH is the working directory itself to exec and sh.
    { entry: 'relative ones only', path: '.:tools' },
    { entry: 'an empty PATH', path: '' },
  ])(
    '($entry first) runs nothing of theirs: submit, wait, logs, list, profile add',
    async ({ path }) => {
      const marks = rootDir('search-path-marks', 0o1777);
      const shared = plantedDirectory(marks);
      const state = join(ownedDir(victim, 'search-path'), 'state');
      const yonder = victimIn(shared, state, { PATH: path });
      const added = await yonder(['profile', 'add', 'w', '--backend', 'local']);
      expect(added.code, added.stderr).toBe(0);
      // `profile add` of an ssh profile asks `ssh -V` which transport to choose.
      const ssh = await yonder([
        'profile',
        'add',
        'box',
        '--backend',
        'ssh',
        '--host',
        'h.invalid',
      ]);
      expect(ssh.code, ssh.stderr).toBe(0);
      const submitted = await yonder([
        'submit',
        '--profile',
        'w',
        '--json',
        '--',
        'sh',
        '-c',
        'echo ran; true',
      ]);
      expect(submitted.code, submitted.stderr).toBe(0);
      const id = JSON.parse(submitted.stdout).result.id as string;
      const waited = await yonder(['wait', id, '--timeout', '30']);
      expect(waited.code, waited.stderr).toBe(0);
      expect((await yonder(['logs', id])).stdout).toBe('ran\n');
      expect((await yonder(['list'])).code).toBe(0);
      expect((await yonder(['profile', 'check', 'w'])).code).toBe(0);
      expect(readdirSync(marks)).toEqual([]);
      expect(existsSync(join(shared, 'state'))).toBe(false);
    },
  );
});

describe('a relative SHELL, in a directory the attacker writes', () => {
  it.each(['ssh2', 'openssh'])(
    'never starts their shell for a ProxyCommand (%s; ssh execs $SHELL by its path)',
    async (transport) => {
      const marks = rootDir('search-path-marks', 0o1777);
      const shared = plantedDirectory(marks);
      const home = ownedDir(victim, 'search-path-shell');
      const state = join(home, 'state');
      const config = join(home, 'ssh_config');
      const key = join(home, 'id_ed25519');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
      writeFileSync(
        config,
        `Host box\n  HostName nowhere.invalid\n  IdentityFile ${key}\n  ProxyCommand /bin/sh -c 'exit 3'\n`,
      );
      execFileSync('chown', [`${victim.uid}:${victim.gid}`, config, key, `${key}.pub`]);
      const yonder = victimIn(shared, state, { SHELL: 'tools/sh' });
      const add = `profile add box --backend ssh --host box --transport ${transport} --ssh-config`;
      const added = await yonder([...add.split(' '), config]);
      expect(added.code, added.stderr).toBe(0);
      const submitted = await yonder(['submit', '--profile', 'box', '--', 'true']);
      // The ProxyCommand ran (under /bin/sh) and failed as it should.
      expect(submitted.code).not.toBe(0);
      if (transport === 'ssh2') expect(submitted.stderr).toContain('ProxyCommand exited with 3');
      expect(readdirSync(marks)).toEqual([]);
    },
  );
});

describe('a command profile’s program by a relative path, run in a directory the attacker writes', () => {
  it('is refused when the profile is saved, naming the fix; nothing of theirs runs', async () => {
    const marks = rootDir('search-path-marks', 0o1777);
    const shared = plantedDirectory(marks);
    for (const name of ['qsub', 'qstat', 'qdel']) {
      writeFileSync(join(shared, 'tools', name), `#!/bin/sh\n: > ${marks}/ran-${name}\necho 42\n`);
      chmodSync(join(shared, 'tools', name), 0o755);
    }
    execFileSync('chown', ['-R', `${attacker.uid}:${attacker.gid}`, join(shared, 'tools')]);
    const state = join(ownedDir(victim, 'search-path-command'), 'state');
    const yonder = victimIn(shared, state, {});
    const templates = {
      submit: 'tools/qsub {script}',
      status: 'tools/qstat {external_ids}',
      cancel: 'tools/qdel {external_id}',
    };
    const sets = Object.entries(templates).flatMap(([key, text]) => ['--set', `${key}=${text}`]);
    const added = await yonder(['profile', 'add', 'q', '--backend', 'command', ...sets]);
    expect(added.code).not.toBe(0);
    expect(added.stderr).toContain('options.submit');
    expect(added.stderr).toContain('"tools/qsub" by a relative path');
    expect(added.stderr).toContain('give its absolute path');
    const submitted = await yonder(['submit', '--profile', 'q', '--', 'true']);
    expect(submitted.code).not.toBe(0);
    expect(readdirSync(marks)).toEqual([]);
  });
});

describe('an editor named by a relative path, in a directory the attacker writes', () => {
  it.each(['tools/ed', './ed'])(
    '$VISUAL=%s: profile edit refuses it, naming the fix; nothing of theirs runs',
    async (setting) => {
      const marks = rootDir('search-path-marks', 0o1777);
      const shared = plantedDirectory(marks);
      for (const path of ['ed', join('tools', 'ed')]) {
        writeFileSync(join(shared, path), `#!/bin/sh\n: > ${marks}/ran-ed\n`);
        chmodSync(join(shared, path), 0o755);
      }
      execFileSync('chown', [
        '-R',
        `${attacker.uid}:${attacker.gid}`,
        join(shared, 'tools'),
        join(shared, 'ed'),
      ]);
      const state = join(ownedDir(victim, 'search-path-editor'), 'state');
      const yonder = victimIn(shared, state, { VISUAL: setting });
      expect((await yonder(['profile', 'add', 'w', '--backend', 'local'])).code).toBe(0);
      const edited = await yonder(['profile', 'edit', 'w']);
      expect(edited.code).toBe(1);
      expect(edited.stderr).toContain(`The editor (${setting}) is named by a relative path`);
      expect(readdirSync(marks)).toEqual([]);
    },
  );
});
