/**
 * Issue 11, the umask 002 rule under attack, through the real CLI run as the victim: a group of
 * the victim's own is theirs only while nobody else can write through it, so an access control
 * list naming the attacker (the group bits are then its mask) and a second /etc/group entry of
 * the victim's gid listing the attacker (a careless admin's `groupadd -o`; `getent group GID`
 * answers with the first entry only) are refused, for the ledger (core's check) and the work
 * directory (the wrapper's sh check) alike.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  asUser,
  CLI_BIN,
  cleanupUsers,
  ownedDir,
  requireCliBuild,
  requireUsers,
  rootDir,
  type TestUser,
  yonderJsonAs,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;

beforeAll(() => {
  requireCliBuild();
  ({ victim, attacker } = requireUsers());
});
afterAll(() => cleanupUsers());

/**
 * As `umask 002` leaves them, in a directory of root's every user can pass (the victim's home is
 * private): `names` in it, each directory on the way the victim's and their group's, mode 0775.
 */
function umask002(prefix: string, ...names: string[]): { base: string; paths: string[] } {
  const base = rootDir(prefix, 0o755);
  const paths = names.map((name) => join(base, name));
  for (const name of names) {
    let at = base;
    for (const part of name.split('/')) {
      at = join(at, part);
      mkdirSync(at, { recursive: true });
      chownSync(at, victim.uid, victim.gid);
      execFileSync('chmod', ['0775', at]);
    }
  }
  return { base, paths };
}

/** `yonder profile add NAME --backend local --workdir WORKDIR`, as it goes to `run`. */
function profileAdd(name: string, workdir: string): string[] {
  return ['profile', 'add', name, '--backend', 'local', '--workdir', workdir];
}

/** `yonder submit --profile NAME -- true`. */
function submitTo(name: string): string[] {
  return ['submit', '--profile', name, '--', 'true'];
}

/** Lines to add to /etc/group and /etc/passwd for one run; a file to log each getent run in. */
interface Databases {
  group?: readonly string[];
  passwd?: readonly string[];
  getentLog?: string;
}

/**
 * `argv` run as `user` (runuser, a clean environment) with `extra` lines added to /etc/group
 * and /etc/passwd for this run only, in a mount namespace of its own; its status and output.
 */
function withGroupLines(
  extra: Databases,
  user: TestUser,
  argv: readonly string[],
): { code: number | null; stdout: string; stderr: string } {
  const dir = rootDir('databases', 0o755);
  const binds = (['group', 'passwd'] as const).flatMap((name) => {
    const lines = extra[name];
    if (!lines) return [];
    const copy = join(dir, name);
    writeFileSync(copy, `${readFileSync(`/etc/${name}`, 'utf8')}${lines.join('\n')}\n`);
    execFileSync('chmod', ['0644', copy]);
    return [`mount --bind ${copy} /etc/${name} &&`];
  });
  if (extra.getentLog) {
    // The real getent, run by a wrapper in its place that notes each question.
    execFileSync('cp', ['/usr/bin/getent', join(dir, 'real-getent')]);
    const wrapper = join(dir, 'getent');
    writeFileSync(
      wrapper,
      `#!/bin/sh\necho "$*" >> ${extra.getentLog}\nexec ${dir}/real-getent "$@"\n`,
    );
    execFileSync('chmod', ['0755', wrapper]);
    binds.push(`mount --bind ${wrapper} /usr/bin/getent &&`);
  }
  const script = `${binds.join(' ')} exec runuser -u "$@"`;
  const clean = ['env', '-i', `HOME=${user.home}`, 'PATH=/usr/bin:/bin', 'NO_COLOR=1'];
  const result = spawnSync(
    'unshare',
    [
      '-m',
      '--propagation',
      'private',
      'sh',
      '-c',
      script,
      'ns',
      user.name,
      '--',
      ...clean,
      ...argv,
    ],
    { encoding: 'utf8', cwd: '/', timeout: 60_000 },
  );
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `yonder ARGS --json` as the victim with the ledger `state` and no config, in withGroupLines. */
function yonderWithGroupLines(extra: Databases, state: string, args: readonly string[]) {
  const env = [`YONDER_STATE_DIR=${state}`, `XDG_CONFIG_HOME=${join(state, '.no-config')}`];
  const split = args.indexOf('--');
  const withJson =
    split < 0 ? [...args, '--json'] : [...args.slice(0, split), '--json', ...args.slice(split)];
  const result = withGroupLines(extra, victim, [...env, process.execPath, CLI_BIN, ...withJson]);
  try {
    return { ...result, doc: JSON.parse(result.stdout) };
  } catch {
    throw new Error(`no JSON (exit ${result.code}): ${result.stdout}\n${result.stderr}`);
  }
}

describe('a group of the victim’s own that someone else can write through is not the victim’s', () => {
  it('an access control list naming the attacker (mode 0775, its group the victim’s) is refused for the work directory and the config', async () => {
    const { paths } = umask002('solo-acl', 'project', 'config/yonder');
    const [project, config] = paths as [string, string];
    writeFileSync(join(config, 'config.json'), '{}\n', { mode: 0o644 });
    chownSync(join(config, 'config.json'), victim.uid, victim.gid);
    execFileSync('chmod', ['0755', project]);
    execFileSync('setfacl', ['-m', `u:${attacker.name}:rwx`, project]);
    // The attacker can write there, and the mode says only 0775.
    asUser(attacker, ['mkdir', join(project, 'planted')]);
    expect(execFileSync('stat', ['-c', '%a %G', project], { encoding: 'utf8' })).toBe(
      `775 ${victim.name}\n`,
    );
    const state = join(ownedDir(victim, 'solo-acl-state'), 'state');
    expect((await yonderJsonAs(victim, state, profileAdd('w', join(project, 'runs')))).code).toBe(
      0,
    );
    const refused = await yonderJsonAs(victim, state, submitTo('w'));
    expect(refused.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(refused.doc.error.message).toContain(
      `${project} (owner ${victim.name} (uid ${victim.uid}), mode 0775) is writable by the users and groups its access control list names`,
    );
    expect(refused.doc.error.message).toContain(`Fix: chmod go-w ${project}`);
    expect(readdirSync(project)).toEqual(['planted']);

    // The config's directory, the same way: a plugin planted there would run as the victim.
    execFileSync('setfacl', ['-m', `u:${attacker.name}:rwx`, config]);
    const env = { XDG_CONFIG_HOME: join(config, '..') };
    const listed = await yonderJsonAs(victim, state, ['plugins'], env);
    expect(listed.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(listed.doc.error.message).toContain(
      `${config} (owner ${victim.name} (uid ${victim.uid}), mode 0775) is writable by the users and groups its access control list names`,
    );
    // The fix the message names works (chmod g-w takes write from the ACL's mask).
    execFileSync('chmod', ['go-w', config, project]);
    expect((await yonderJsonAs(victim, state, ['plugins'], env)).code).toBe(0);
    expect((await yonderJsonAs(victim, state, submitTo('w'))).code).toBe(0);
  });

  it('a second /etc/group entry of the victim’s gid listing the attacker (groupadd -o) is refused for the ledger and the work directory', () => {
    const alias = { group: [`${victim.name}-share:x:${victim.gid}:${attacker.name}`] };
    const { paths } = umask002('solo-twice', 'project', 'state');
    const [project, state] = paths as [string, string];
    // getent group GID answers with the victim's own line; the attacker has the gid all the same.
    expect(withGroupLines(alias, victim, ['getent', 'group', String(victim.gid)]).stdout).toBe(
      `${victim.name}:x:${victim.gid}:\n`,
    );
    expect(withGroupLines(alias, attacker, ['id', '-G']).stdout.split(' ').map(Number)).toContain(
      victim.gid,
    );
    expect(withGroupLines(alias, attacker, ['mkdir', join(project, 'planted')]).code).toBe(0);
    // Without the second entry both are the victim's (the umask 002 rule).
    expect(yonderWithGroupLines({}, state, profileAdd('w', join(project, 'runs'))).code).toBe(0);
    const fine = yonderWithGroupLines({}, state, submitTo('w'));
    expect(fine.code, fine.stdout).toBe(0);

    const ledger = yonderWithGroupLines(alias, state, ['list']);
    expect(ledger.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(ledger.doc.error.message).toContain(
      `${state} (owner ${victim.name} (uid ${victim.uid}), mode 0775) is writable by its group`,
    );
    expect(ledger.doc.error.message).toContain(`chmod go-w ${state}`);

    const elsewhere = join(ownedDir(victim, 'solo-twice-state'), 'state');
    expect(yonderWithGroupLines({}, elsewhere, profileAdd('w', join(project, 'more'))).code).toBe(
      0,
    );
    const submit = yonderWithGroupLines(alias, elsewhere, submitTo('w'));
    expect(submit.doc.error.code).toBe('E_UNTRUSTED_PATH');
    expect(submit.doc.error.message).toContain(
      `Refusing the work directory ${join(project, 'more')}: ${project} (owner ${victim.name} (uid ${victim.uid}), mode 0775) is writable by its group`,
    );
    expect(readdirSync(project).sort()).toEqual(['planted', 'runs']);
  });

  it('a user database of more than 1 MiB (a large site’s directory) leaves the victim’s own group theirs, for core’s check as for the sh one', () => {
    const passwd = Array.from(
      { length: 25_000 },
      (_, i) =>
        `bulk${i}:x:${200_000 + i}:${200_000 + i}:A user of a large directory:/home/bulk${i}:/bin/sh`,
    );
    const { paths } = umask002('solo-large', 'project', 'state');
    const [project, state] = paths as [string, string];
    const large = { passwd };
    const size = withGroupLines(large, victim, ['sh', '-c', 'getent passwd | wc -c']).stdout;
    expect(Number(size)).toBeGreaterThan(2 ** 20);
    expect(yonderWithGroupLines(large, state, profileAdd('w', join(project, 'runs'))).code).toBe(0);
    const submitted = yonderWithGroupLines(large, state, submitTo('w'));
    expect(submitted.code, submitted.stdout).toBe(0);
    expect(yonderWithGroupLines(large, state, ['list']).doc.result).toHaveLength(1);
  });

  it('costs a user in /tmp nothing: a sticky directory on the way is not asked about, only a directory its group can write', () => {
    const log = join(rootDir('getent-log', 0o755), 'asked');
    writeFileSync(log, '');
    execFileSync('chmod', ['0666', log]);
    const shared = rootDir('sticky', 0o1777);
    const state = join(shared, 'state');
    mkdirSync(state, { mode: 0o700 });
    chownSync(state, victim.uid, victim.gid);
    const listed = yonderWithGroupLines({ getentLog: log }, state, ['list']);
    expect(listed.code, listed.stdout).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe('');
    const [mine] = umask002('solo-asked', 'state').paths as [string];
    expect(yonderWithGroupLines({ getentLog: log }, mine, ['list']).code).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe(`group ${victim.gid}\ngroup\npasswd\n`);
  });
});
