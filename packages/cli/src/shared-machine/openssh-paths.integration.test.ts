/**
 * Issue 25 attacks 1, 4 and 6 on the openssh transport, through the built CLI run as the victim
 * (yonder-victim) against files of another user of the machine (yonder-attacker): a team ssh
 * config another user can change is judged by the one trust rule before ssh reads it (ssh does
 * not check a `-F` file); the user's own ControlPath in a directory others can write is refused
 * before ssh connects to whatever socket is there; and a control directory another user made
 * first in /tmp denies nothing.
 */
import { execFileSync } from 'node:child_process';
import {
  chownSync,
  copyFileSync,
  existsSync,
  lstatSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  asUser,
  cleanupUsers,
  labGroup,
  onCleanup,
  ownedDir,
  requireCliBuild,
  requireSshHosts,
  requireUsers,
  rootDir,
  sshHostsEnv,
  startAsUser,
  type TestUser,
  until,
  yonderAs,
  yonderJsonAs,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;

beforeAll(() => {
  requireCliBuild();
  requireSshHosts();
  ({ victim, attacker } = requireUsers());
});
afterAll(() => cleanupUsers());

/** A directory of the victim's with the test client's key and known hosts, as theirs. */
function victimKeys(): string {
  const dir = ownedDir(victim, 'ssh-keys');
  const client = sshHostsEnv().YONDER_SSH_CLIENT_DIR as string;
  for (const [from, to] of [
    ['id_ed25519', 'id'],
    ['known_hosts', 'known_hosts'],
  ] as const) {
    copyFileSync(join(client, from), join(dir, to));
    chownSync(join(dir, to), victim.uid, victim.gid);
    execFileSync('chmod', ['0600', join(dir, to)]);
  }
  return dir;
}

/** An ssh config block for the target host, logging in with the victim's copy of the key. */
function targetBlock(keys: string, extra = ''): string {
  return [
    'Host box',
    '  HostName 127.0.0.1',
    `  Port ${sshHostsEnv().YONDER_SSH_PORT_TARGET}`,
    '  User yonder-test',
    '  IdentitiesOnly yes',
    `  IdentityFile ${keys}/id`,
    `  UserKnownHostsFile ${keys}/known_hosts`,
    '  GlobalKnownHostsFile /dev/null',
    '  StrictHostKeyChecking yes',
    extra,
    '',
  ].join('\n');
}

/** A ledger of the victim's with an openssh profile `box` read from `config`. */
async function victimLedger(config: string): Promise<string> {
  const state = join(ownedDir(victim, 'openssh-state'), 'state');
  const added = await yonderAs(victim, state, [
    'profile',
    'add',
    'box',
    '--backend',
    'ssh',
    '--host',
    'box',
    '--transport',
    'openssh',
    '--ssh-config',
    config,
    '--cancel-grace',
    '1',
  ]);
  expect(added.code, added.stdout + added.stderr).toBe(0);
  return state;
}

describe('attack 1: a team ssh config another user can change', () => {
  it('is refused before ssh reads it: the ProxyCommand another user appended never runs as the victim', async () => {
    const team = rootDir('team-ssh', 0o2775);
    chownSync(team, 0, labGroup());
    const marks = rootDir('team-ssh-marks', 0o1777);
    const mark = join(marks, 'ran');
    const config = join(team, 'config');
    writeFileSync(config, 'Host box\n  HostName 127.0.0.1\n  Port 1\n  BatchMode yes\n');
    chownSync(config, victim.uid, labGroup());
    execFileSync('chmod', ['0664', config]);
    const state = await victimLedger(config);
    // The other member of the team appends a ProxyCommand to the file both may write.
    asUser(attacker, [
      'sh',
      '-c',
      `printf '  ProxyCommand sh -c "id -un > %s; exit 1"\\n' '${mark}' >> '${config}'`,
    ]);
    expect(readFileSync(config, 'utf8')).toContain('ProxyCommand');

    const submitted = await yonderJsonAs(victim, state, [
      'submit',
      '--profile',
      'box',
      '--',
      'true',
    ]);
    expect(submitted.code).toBe(1);
    expect(submitted.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(submitted.doc.error.message).toContain(`Refusing the ssh config ${config}`);
    expect(submitted.doc.error.message).toContain('is writable by its group');
    const check = await yonderAs(victim, state, ['profile', 'check', 'box']);
    expect(check.code).toBe(1);
    expect(check.stdout + check.stderr).toContain(`Refusing the ssh config ${config}`);
    expect(existsSync(mark)).toBe(false);
  }, 120_000);
});

describe('attack 4: the user’s own ControlPath in a directory others can write', () => {
  it('is refused, naming the fix, before ssh connects to the socket another user put there', async () => {
    const keys = victimKeys();
    const shared = rootDir('shared-cm', 0o1777);
    const socket = join(shared, `cm-yonder-test@127.0.0.1:${sshHostsEnv().YONDER_SSH_PORT_TARGET}`);
    const config = join(keys, 'config');
    writeFileSync(
      config,
      targetBlock(
        keys,
        `  ControlMaster auto\n  ControlPath ${shared}/cm-%r@%h:%p\n  BatchMode yes`,
      ),
    );
    chownSync(config, victim.uid, victim.gid);
    const state = await victimLedger(config);
    // The attacker's "master": a socket at the victim's ControlPath that records who connects.
    const heard = join(rootDir('shared-cm-heard', 0o1777), 'heard');
    const listener = [
      "const net = require('node:net'); const fs = require('node:fs');",
      `const server = net.createServer((c) => { fs.appendFileSync(${JSON.stringify(heard)}, 'connected\\n'); c.destroy(); });`,
      `server.listen(${JSON.stringify(socket)}, () => { fs.chmodSync(${JSON.stringify(socket)}, 0o777); });`,
    ].join(' ');
    startAsUser(attacker, [process.execPath, '-e', listener]);
    await until(
      () => existsSync(socket) && lstatSync(socket).isSocket(),
      30_000,
      'the attacker’s socket',
    );

    const submitted = await yonderJsonAs(victim, state, [
      'submit',
      '--profile',
      'box',
      '--',
      'true',
    ]);
    expect(submitted.code).toBe(1);
    expect(submitted.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(submitted.doc.error.message).toContain(
      `Refusing the directory of your ssh ControlPath ${socket}, ${shared}`,
    );
    expect(submitted.doc.error.message).toContain('ControlPath ~/.ssh/cm-%C');
    const check = await yonderAs(victim, state, ['profile', 'check', 'box']);
    expect(check.code).toBe(1);
    expect(check.stdout + check.stderr).toContain('Refusing the directory of your ssh ControlPath');
    expect(existsSync(heard)).toBe(false);
  }, 120_000);
});

describe('attack 6: the control directory another user made first in /tmp', () => {
  it('denies nothing: the victim’s commands run, through a directory of their own no one could make first', async () => {
    const squatted = `/tmp/yonder-${victim.uid}`;
    rmSync(squatted, { recursive: true, force: true });
    asUser(attacker, ['mkdir', '-m', '0755', squatted]);
    onCleanup(() => rmSync(squatted, { recursive: true, force: true }));
    const keys = victimKeys();
    const config = join(keys, 'config');
    writeFileSync(config, targetBlock(keys, '  BatchMode yes'));
    chownSync(config, victim.uid, victim.gid);
    const state = await victimLedger(config);
    // No XDG_RUNTIME_DIR (a login without systemd's session): the case /tmp was used for.
    const submitted = await yonderJsonAs(victim, state, [
      'submit',
      '--profile',
      'box',
      '--',
      'sh',
      '-c',
      'echo "ran as $(id -un)"',
    ]);
    expect(submitted.code, submitted.stdout + submitted.stderr).toBe(0);
    const id = submitted.doc.result.id as string;
    const waited = await yonderAs(victim, state, ['wait', id, '--timeout', '60']);
    expect(waited.code, waited.stdout + waited.stderr).toBe(0);
    expect((await yonderAs(victim, state, ['logs', id])).stdout).toBe('ran as yonder-test\n');
    // Where the sockets are: a directory mkdtemp made, the victim's, 0700, named in their cache.
    const recorded = readFileSync(
      join(victim.home, '.cache', 'yonder', 'ssh-control-directory'),
      'utf8',
    ).trim();
    onCleanup(() => rmSync(recorded, { recursive: true, force: true }));
    expect(recorded).toMatch(new RegExp(`^/tmp/yonder-${victim.uid}-[A-Za-z0-9]{6}$`));
    const info = lstatSync(recorded);
    expect([info.uid, info.mode & 0o7777]).toEqual([victim.uid, 0o700]);
    // The next command finds the same directory and its master: no new one is made.
    const check = await yonderAs(victim, state, ['profile', 'check', 'box']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain('master = running');
    expect(
      readFileSync(join(victim.home, '.cache', 'yonder', 'ssh-control-directory'), 'utf8').trim(),
    ).toBe(recorded);
    expect((await yonderAs(victim, state, ['disconnect', 'box'])).code).toBe(0);
  }, 180_000);
});
