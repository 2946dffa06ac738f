/**
 * Issue 11, the hole a third review left open: the CLI installed below a directory others may
 * write to (a sticky /tmp), without ssh2's optional cpu-features (its native build often fails,
 * and npm then leaves it out). ssh2 requires it when first loaded, looking in every
 * `node_modules` up to `/`: the one another user makes there must never run as the victim.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cleanupUsers,
  installCli,
  onCleanup,
  ownedDir,
  requireUsers,
  rootDir,
  runAs,
  type TestUser,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;

beforeAll(() => {
  ({ victim, attacker } = requireUsers());
});
afterAll(() => cleanupUsers());

describe('ssh2’s optional import, for a CLI installed below a sticky directory', () => {
  it('is refused, naming the directory, whether or not another user planted it; what they planted never runs', async () => {
    const shared = rootDir('ssh2-lookup', 0o1777);
    const marks = rootDir('ssh2-lookup-marks', 0o1777);
    const cli = installCli(['@yonder/backend-ssh'], shared);
    onCleanup(() => cli.remove());
    // The premise: no cpu-features of its own, so Node looks above the installation.
    expect(cli.packages).toContain('ssh2');
    expect(existsSync(join(cli.root, 'node_modules', 'cpu-features'))).toBe(false);
    const state = ownedDir(victim, 'ssh2-lookup-state');
    const env = { YONDER_STATE_DIR: join(state, 'state') };
    const add = ['profile', 'add', 'box', '--backend', 'ssh', '--host', '127.0.0.1'];
    const added = await runAs(victim, cli.bin, [...add, '--transport', 'ssh2', '--force'], { env });
    expect(added.code, added.stderr).toBe(0);
    // ssh2 is loaded when a connection is first opened: a check of an ssh2 profile opens one.
    // Before anyone planted it: the lookup is refused as ssh2 is about to load, since another
    // user could make the package at any time, and ssh2 would find it whenever it first loads
    // (in a long-lived process, long after the bundled backends were checked at start).
    const check = () => runAs(victim, cli.bin, ['profile', 'check', 'box', '--json'], { env });
    const unplanted = await check();
    expect(unplanted.stdout + unplanted.stderr).toContain('E_UNTRUSTED_PATH');
    expect(unplanted.stdout + unplanted.stderr).toContain(
      `${shared} (owner root (uid 0), mode 01777)`,
    );
    expect(unplanted.stdout + unplanted.stderr).toContain('--transport openssh');

    const planted = join(shared, 'node_modules', 'cpu-features');
    mkdirSync(planted, { recursive: true });
    writeFileSync(
      join(planted, 'package.json'),
      JSON.stringify({ name: 'cpu-features', version: '9.9.9' }),
    );
    writeFileSync(
      join(planted, 'index.js'),
      `require('node:fs').writeFileSync(${JSON.stringify(marks)} + '/ran-' + require('node:os').userInfo().username, '');
module.exports = () => ({});
`,
    );
    execFileSync('chown', ['-hR', `${attacker.uid}:${attacker.gid}`, join(shared, 'node_modules')]);
    // Once it is there, the check of the bundled backends' lookup refuses it already.
    const result = await check();
    expect(existsSync(join(marks, `ran-${victim.name}`))).toBe(false);
    expect(result.stdout + result.stderr).toContain(join(shared, 'node_modules'));
    expect(result.stdout + result.stderr).toContain(`owner ${attacker.name}`);
  });

  it('an installed cpu-features whose entry leads out of it, into a directory another user owns, is refused; theirs never runs', async () => {
    const marks = rootDir('ssh2-lookup-marks', 0o1777);
    const shared = rootDir('ssh2-lookup-entry', 0o1777);
    const cli = installCli(['@yonder/backend-ssh']);
    onCleanup(() => cli.remove());
    // Root's install, with a cpu-features of its own whose `main` points into a shared place
    // (as a review found: the file Node loads is outside every directory the lookup passes).
    const own = join(cli.root, 'node_modules', 'cpu-features');
    mkdirSync(own);
    const theirs = join(shared, 'cf');
    writeFileSync(
      join(own, 'package.json'),
      JSON.stringify({ name: 'cpu-features', version: '9.9.9', main: join(theirs, 'index.js') }),
    );
    mkdirSync(theirs);
    writeFileSync(
      join(theirs, 'index.js'),
      `require('node:fs').writeFileSync(${JSON.stringify(marks)} + '/ran-' + require('node:os').userInfo().username, '');
module.exports = () => ({});
`,
    );
    execFileSync('chown', ['-hR', `${attacker.uid}:${attacker.gid}`, theirs]);
    const state = ownedDir(victim, 'ssh2-lookup-entry-state');
    const env = { YONDER_STATE_DIR: join(state, 'state') };
    const add = ['profile', 'add', 'box', '--backend', 'ssh', '--host', '127.0.0.1'];
    await runAs(victim, cli.bin, [...add, '--transport', 'ssh2', '--force'], { env });
    const result = await runAs(victim, cli.bin, ['profile', 'check', 'box', '--json'], { env });
    expect(existsSync(join(marks, `ran-${victim.name}`))).toBe(false);
    expect(result.stdout + result.stderr).toContain('E_UNTRUSTED_PATH');
    expect(result.stdout + result.stderr).toContain(`${theirs} (owner ${attacker.name}`);
  });
});
