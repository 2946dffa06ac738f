/**
 * Issue 11, attack 3: plugin packages load only from the CLI's own installation, the config
 * file's directory and the global prefix — never from the working directory or its parents,
 * and never from a config, or a config directory, that another user can change.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cleanupUsers,
  type InstalledCli,
  installPackages,
  jsonOf,
  onCleanup,
  ownedDir,
  runAs,
  type TestUser,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;
let cli: InstalledCli;

beforeAll(() => {
  // A site that installed the CLI without the Slurm backend.
  ({ victim, attacker, cli } = usersWithCli());
});
afterAll(() => cleanupUsers());

/** A shared directory as /tmp is: root's, sticky, open to all (a stand-in, to leave /tmp alone). */
function stickyShared(): string {
  const dir = mkdtempSync(join(tmpdir(), 'yonder-sticky-'));
  chmodSync(dir, 0o1777);
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The attacker's package `name` in `<dir>/node_modules`: importing it leaves `pwned-<user>` in
 * `marks`, naming whoever loaded it.
 */
function plantPackage(dir: string, name: string, marks: string): void {
  const root = join(dir, 'node_modules', ...name.split('/'));
  mkdirSync(root, { recursive: true });
  giveTo(attacker, join(dir, 'node_modules'));
  const files = {
    'package.json': JSON.stringify({
      name,
      version: '9.9.9',
      type: 'module',
      exports: './index.js',
    }),
    'index.js': `import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
writeFileSync(${JSON.stringify(marks)} + '/pwned-' + userInfo().username, '');
export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }
`,
  };
  for (const [file, text] of Object.entries(files)) {
    writeFileSync(join(root, file), text);
    chownSync(join(root, file), attacker.uid, attacker.gid);
  }
}

/**
 * The victim's own config directory below `shared` (a directory all may write to, as /tmp),
 * naming the plugin `yonder-backend-demo` installed in it with `index`. Returns the CLI's env.
 */
function demoConfigBelow(shared: string, index: string): Record<string, string> {
  const config = join(shared, 'victim-config');
  const demo = join(config, 'node_modules', 'yonder-backend-demo');
  mkdirSync(demo, { recursive: true });
  writeFileSync(
    join(demo, 'package.json'),
    JSON.stringify({
      name: 'yonder-backend-demo',
      version: '1.0.0',
      type: 'module',
      exports: './index.js',
    }),
  );
  writeFileSync(join(demo, 'index.js'), index);
  writeFileSync(join(config, 'config.json'), JSON.stringify({ plugins: ['yonder-backend-demo'] }));
  giveTo(victim, config);
  chmodSync(config, 0o700);
  const state = ownedDir(victim, 'demo-config-state');
  return { YONDER_CONFIG: join(config, 'config.json'), YONDER_STATE_DIR: join(state, 'state') };
}

function pwned(marks: string): boolean {
  return existsSync(join(marks, `pwned-${victim.name}`));
}

describe('plugin resolution', () => {
  it('a package planted in node_modules of a shared parent of the working directory never runs', async () => {
    const shared = stickyShared();
    plantPackage(shared, '@yonder/backend-slurm', shared);
    plantPackage(shared, '@yonder/backend-ssh', shared);
    const work = join(shared, 'work');
    mkdirSync(work);
    chownSync(work, victim.uid, victim.gid);
    const state = ownedDir(victim, 'plugins-state');
    const env = { YONDER_STATE_DIR: join(state, 'state') };

    const plugins = await runAs(victim, cli.bin, ['plugins'], { env, cwd: work });
    expect(plugins.code, plugins.stderr).toBe(0);
    expect(plugins.stdout).toContain('Not installed: @yonder/backend-ssh, @yonder/backend-slurm');
    const add = await runAs(
      victim,
      cli.bin,
      ['profile', 'add', 's', '--backend', 'slurm', '--host', 'login', '--json'],
      { env, cwd: work },
    );
    expect(add.code).toBe(1);
    expect(jsonOf(add).error.message).toContain('npm install @yonder/backend-slurm');
    expect(pwned(shared)).toBe(false);
  });

  it('a plugin in the config file’s directory loads, resolved by Node’s rules', async () => {
    const home = ownedDir(victim, 'config-home');
    const config = join(home, '.config', 'yonder');
    mkdirSync(config, { recursive: true, mode: 0o700 });
    // A third-party plugin (here one that re-exports the command backend) installed there.
    installPackages(config, ['@yonder/backend-command']);
    const demo = join(config, 'node_modules', 'yonder-backend-demo');
    mkdirSync(demo);
    writeFileSync(
      join(demo, 'package.json'),
      JSON.stringify({
        name: 'yonder-backend-demo',
        version: '1.2.3',
        type: 'module',
        exports: './index.js',
      }),
    );
    writeFileSync(
      join(demo, 'index.js'),
      "export { createYonderPlugin } from '@yonder/backend-command';\n",
    );
    writeFileSync(
      join(config, 'config.json'),
      JSON.stringify({ plugins: ['yonder-backend-demo'] }),
    );
    giveTo(victim, home);
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { HOME: home, YONDER_STATE_DIR: join(home, 'state') },
    });
    expect(result.code, result.stderr).toBe(0);
    const status = jsonOf(result).result.plugins.find(
      (entry: { package: string }) => entry.package === 'yonder-backend-demo',
    );
    expect(status, JSON.stringify(status)).toMatchObject({
      ok: true,
      source: 'config',
      version: '1.2.3',
    });
    expect(status.path).toBe(demo);
  });

  it('a plugin’s own import found in node_modules of a shared parent: the plugin is refused and reported, the rest works', async () => {
    const shared = stickyShared();
    const marks = stickyShared();
    // Its dependency is not installed beside it, so Node would look further up.
    const env = demoConfigBelow(
      shared,
      "import 'yonder-demo-dependency';\nexport function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }\n",
    );
    plantPackage(shared, 'yonder-demo-dependency', marks);
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    const status = jsonOf(result).result.plugins.find(
      (entry: { package: string }) => entry.package === 'yonder-backend-demo',
    );
    expect(status, JSON.stringify(status)).toMatchObject({ ok: false, missing: false });
    expect(status.error).toContain(`${join(shared, 'node_modules')} (owner ${attacker.name}`);
    expect(status.error).toContain('yonder-backend-demo');
    // The built-in backend still runs jobs.
    const submitted = await runAs(victim, cli.bin, ['submit', '--json', '--', 'true'], { env });
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(pwned(marks)).toBe(false);
  });

  it('a plugin below a shared directory with no node_modules yet: refused before it is imported, so one made there later is never used', async () => {
    const shared = stickyShared();
    const marks = stickyShared();
    // It would load a dependency only when asked, long after any check at start had looked.
    const env = demoConfigBelow(
      shared,
      `import { writeFileSync } from 'node:fs';
writeFileSync(${'$'}{JSON.stringify(join(marks, 'loaded'))}, '');
export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }
`,
    );
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    const status = jsonOf(result).result.plugins.find(
      (entry: { package: string }) => entry.package === 'yonder-backend-demo',
    );
    expect(status, JSON.stringify(status)).toMatchObject({ ok: false, missing: false });
    expect(status.error).toContain(
      `${shared} (owner root (uid 0), mode 01777) is writable by its group and others`,
    );
    expect(status.error).toContain(`who could create ${join(shared, 'node_modules')}`);
    expect(status.error).toContain(
      'Fix: use a location below directories that only you or root can write',
    );
    // Not imported at all: nothing of it ran, so nothing it could import later can be the attacker's.
    expect(existsSync(join(marks, 'loaded'))).toBe(false);
  });

  it('a config file others can write: refused with chmod go-w, its plugins never loaded', async () => {
    const home = ownedDir(victim, 'open-config');
    const marks = stickyShared();
    const config = join(home, '.config', 'yonder');
    mkdirSync(config, { recursive: true, mode: 0o700 });
    writeFileSync(
      join(config, 'config.json'),
      JSON.stringify({ plugins: ['yonder-backend-evil'] }),
    );
    giveTo(victim, home);
    plantPackage(config, 'yonder-backend-evil', marks);
    // What the attacker needs to have edited it: the file open to them.
    chmodSync(join(config, 'config.json'), 0o666);
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { HOME: home, YONDER_STATE_DIR: join(home, 'state') },
    });
    expect(result.code).toBe(1);
    const error = jsonOf(result).error;
    expect(error.code).toBe('E_UNTRUSTED_PATH');
    expect(error.message).toContain(`Fix: chmod go-w ${join(config, 'config.json')}`);
    expect(pwned(marks)).toBe(false);
  });

  it('a config in another user’s directory: refused, naming it', async () => {
    const open = mkdtempSync(join(tmpdir(), 'yonder-attacker-config-'));
    chownSync(open, attacker.uid, attacker.gid);
    chmodSync(open, 0o755);
    onCleanup(() => rmSync(open, { recursive: true, force: true }));
    const marks = stickyShared();
    plantPackage(open, 'yonder-backend-evil', marks);
    writeFileSync(join(open, 'config.json'), JSON.stringify({ plugins: ['yonder-backend-evil'] }));
    chownSync(join(open, 'config.json'), attacker.uid, attacker.gid);
    const state = ownedDir(victim, 'foreign-config-state');
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { YONDER_CONFIG: join(open, 'config.json'), YONDER_STATE_DIR: join(state, 'state') },
    });
    expect(result.code).toBe(1);
    const error = jsonOf(result).error;
    expect(error.code).toBe('E_UNTRUSTED_PATH');
    expect(error.message).toContain(`owner ${attacker.name}`);
    expect(pwned(marks)).toBe(false);
  });
});

/** Give everything under `dir` to `user`, as if they had made it. */
function giveTo(user: TestUser, dir: string): void {
  execFileSync('chown', ['-R', `${user.uid}:${user.gid}`, dir]);
}
