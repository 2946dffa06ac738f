/**
 * Issue 11, attack 3, as a review of 0038a6f found it: what Node's lookup passes through on the
 * way to a plugin and its imports (a link another user planted on the way, a dependency linked
 * into another tree, NODE_PATH, a bundled package linked out of the CLI's installation) is
 * checked as the plugin is, so none of it lets another user's pick run as the victim; and, as a
 * second review found, neither a package.json of theirs where Node resolves a package by its own
 * name, a link of theirs on the way to a linked dependency, nor a bundled package's dependency
 * linked out of the installation.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  asUser,
  cleanupUsers,
  type InstalledCli,
  installCli,
  onCleanup,
  ownedDir,
  runAs,
  type TestUser,
  until,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  giveTo,
  manifest,
  markingModule,
  ownScript,
  ranAs,
  statusOf,
  stickyShared,
  writeFiles,
} from './lookup-fixtures.js';

let victim: TestUser;
let attacker: TestUser;
let cli: InstalledCli;

beforeAll(() => {
  // Without the Slurm backend, so that it is looked for in the global prefix too.
  ({ victim, attacker, cli } = usersWithCli());
});
afterAll(() => cleanupUsers());

const ran = (marks: string): boolean => ranAs(victim, marks);
const victimScript = (marks: string): string => ownScript(victim, marks);

/**
 * The attacker's package `name` in `<shared>/node_modules`: theirs, but its entry a link to
 * `target`, so that the file Node resolves to (its real path) is not theirs.
 */
function plantLinkedPackage(shared: string, name: string, target: string): void {
  const root = join(shared, 'node_modules', ...name.split('/'));
  writeFiles(root, {
    'package.json': JSON.stringify({ name, version: '6.6.6', exports: './index.mjs' }),
  });
  symlinkSync(target, join(root, 'index.mjs'));
  giveTo(attacker, join(shared, 'node_modules'));
}

/**
 * Where the victim's lookup reaches the shared directory: a private config directory below
 * it naming a plugin not installed there, or the victim's own global prefix below it (as
 * npm_config_prefix, which npm sets for scripts) while the CLI lacks the Slurm backend.
 */
const lookups = [
  {
    where: 'a sticky parent of the config directory',
    name: 'yonder-backend-demo',
    env: (shared: string): Record<string, string> => {
      const config = join(shared, 'victim-config');
      writeFiles(config, { 'config.json': JSON.stringify({ plugins: ['yonder-backend-demo'] }) });
      giveTo(victim, config);
      chmodSync(config, 0o700);
      return { YONDER_CONFIG: join(config, 'config.json') };
    },
  },
  {
    where: 'a sticky parent of a global prefix',
    name: '@yonder/backend-slurm',
    env: (shared: string): Record<string, string> => {
      const prefix = join(shared, 'victim-prefix');
      mkdirSync(join(prefix, 'lib', 'node_modules'), { recursive: true });
      giveTo(victim, prefix);
      return { npm_config_prefix: prefix };
    },
  },
];

describe('plugin lookup', () => {
  it.each(lookups)(
    'a package planted in $where, its entry a link to a file of the victim’s: never run',
    async ({ name, env }) => {
      const shared = stickyShared();
      const marks = stickyShared();
      const lookup = env(shared);
      plantLinkedPackage(shared, name, victimScript(marks));
      const state = ownedDir(victim, 'lookup-linked-state');
      const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
        env: { ...lookup, YONDER_STATE_DIR: join(state, 'state') },
      });
      expect(result.code, result.stderr).toBe(0);
      const status = statusOf(result, name);
      expect(ran(marks)).toBe(false);
      expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
      expect(status.error).toContain(join(shared, 'node_modules'));
    },
  );

  it('a dependency linked into a tree below a sticky directory: its missing optional import, planted there, never runs', async () => {
    const shared = stickyShared();
    const marks = stickyShared();
    const home = ownedDir(victim, 'lookup-dependency-home');
    const config = join(home, '.config', 'yonder');
    // The plugin, in the config's directory where it belongs; its dependency is a link (as
    // `npm install <folder>` or `npm link` make) to the victim's checkout in the shared tree.
    writeFiles(join(config, 'node_modules', 'yonder-backend-demo'), {
      'package.json': manifest('yonder-backend-demo', { dependencies: { 'demo-helper': '1' } }),
      'index.js': `import 'demo-helper';
export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }
`,
    });
    const checkout = join(shared, 'victim-work', 'demo-helper');
    writeFiles(checkout, {
      'package.json': manifest('demo-helper'),
      // An optional accelerator, as ssh2 loads cpu-features: used when it is there.
      'index.js': "try { await import('demo-optional'); } catch {}\n",
    });
    giveTo(victim, join(shared, 'victim-work'));
    execFileSync('chmod', ['-R', 'go-w', join(shared, 'victim-work')]);
    symlinkSync(checkout, join(config, 'node_modules', 'demo-helper'));
    writeFileSync(
      join(config, 'config.json'),
      JSON.stringify({ plugins: ['yonder-backend-demo'] }),
    );
    giveTo(victim, home);
    writeFiles(join(shared, 'node_modules', 'demo-optional'), {
      'package.json': manifest('demo-optional'),
      'index.js': markingModule(marks),
    });
    giveTo(attacker, join(shared, 'node_modules'));
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { HOME: home, YONDER_STATE_DIR: join(home, 'state') },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(ran(marks)).toBe(false);
    const status = statusOf(result, 'yonder-backend-demo');
    expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
    expect(status.error).toContain(shared);
  });

  it('a bundled package linked out of the CLI’s installation, below a sticky directory with no node_modules: refused, so its lazy imports can never be planted', async () => {
    const shared = stickyShared();
    const withSsh = installCli(['@yonder/backend-ssh']);
    onCleanup(() => withSsh.remove());
    const installed = join(withSsh.root, 'node_modules', '@yonder', 'backend-ssh');
    const moved = join(shared, 'backend-ssh');
    execFileSync('mv', [installed, moved]);
    chmodSync(moved, 0o755);
    symlinkSync(moved, installed);
    const state = ownedDir(victim, 'lookup-bundled-state');
    const result = await runAs(victim, withSsh.bin, ['plugins', '--json'], {
      env: { YONDER_STATE_DIR: join(state, 'state') },
    });
    expect(result.code, result.stderr).toBe(0);
    const status = statusOf(result, '@yonder/backend-ssh');
    expect(status, JSON.stringify(status)).toMatchObject({ ok: false, missing: false });
    expect(status.error).toContain(`who could create ${join(shared, 'node_modules')}`);
    // Where it was installed, the same package loads.
    execFileSync('rm', [installed]);
    execFileSync('mv', [moved, installed]);
    const again = await runAs(victim, withSsh.bin, ['plugins', '--json'], {
      env: { YONDER_STATE_DIR: join(state, 'state') },
    });
    expect(statusOf(again, '@yonder/backend-ssh'), again.stdout).toMatchObject({ ok: true });
  });

  it('a CommonJS plugin’s require of a missing optional module, with NODE_PATH naming a directory below a sticky one: the attacker’s module never runs', async () => {
    const shared = stickyShared();
    const marks = stickyShared();
    const home = ownedDir(victim, 'lookup-cjs-home');
    const config = join(home, '.config', 'yonder');
    writeFiles(join(config, 'node_modules', 'yonder-backend-cjs'), {
      'package.json': JSON.stringify({ name: 'yonder-backend-cjs', version: '1.0.0' }),
      'index.js': `let accelerator = null;
try { accelerator = require('demo-optional-cjs'); } catch {}
exports.createYonderPlugin = () => ({ specificationVersion: 'v1', backends: [] });
`,
    });
    writeFileSync(join(config, 'config.json'), JSON.stringify({ plugins: ['yonder-backend-cjs'] }));
    giveTo(victim, home);
    // The site's NODE_PATH names shared libraries in a directory that anyone could make.
    const libraries = join(shared, 'libs');
    writeFiles(join(libraries, 'demo-optional-cjs'), {
      'index.js': `require('node:fs').writeFileSync(${JSON.stringify(marks)} + '/ran-' + require('node:os').userInfo().username, '');\n`,
    });
    giveTo(attacker, libraries);
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { HOME: home, NODE_PATH: libraries, YONDER_STATE_DIR: join(home, 'state') },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(ran(marks)).toBe(false);
    const status = statusOf(result, 'yonder-backend-cjs');
    // Refused naming the directory, or loaded with NODE_PATH left out: either way not theirs.
    if (!status.ok) expect(status.error).toContain(libraries);
  });
});

/** A second review of 877c83d: a scope's own name, a link of theirs on the way to a linked dependency, a bundled package's dependency linked out. */
describe('plugin lookup, second review', () => {
  it.each(lookups)(
    'a package.json named for the plugin, planted in $where (Node resolves a package by its own name from its scope), its export a link to a file of the victim’s: never run',
    async ({ name, env }) => {
      const shared = stickyShared();
      const marks = stickyShared();
      const lookup = env(shared);
      // No node_modules anywhere: the scope's own name is what Node's resolver tries first.
      writeFileSync(
        join(shared, 'package.json'),
        JSON.stringify({ name, version: '6.6.6', exports: './attacker/entry.mjs' }),
      );
      mkdirSync(join(shared, 'attacker'));
      symlinkSync(victimScript(marks), join(shared, 'attacker', 'entry.mjs'));
      giveTo(attacker, join(shared, 'package.json'));
      giveTo(attacker, join(shared, 'attacker'));
      const state = ownedDir(victim, 'lookup-self-state');
      const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
        env: { ...lookup, YONDER_STATE_DIR: join(state, 'state') },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(ran(marks)).toBe(false);
      const status = statusOf(result, name);
      // Refused naming the shared directory, or not found at all: either way nothing ran.
      expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
      if (!status.missing) expect(status.error).toContain(shared);
    },
  );

  /**
   * The victim's dependency is a link (as `npm install <folder>` makes) whose path passes a link
   * of the attacker's that, when checked, leads to the victim's own code: a real path elsewhere
   * in the victim's home, or one back inside the same node_modules.
   */
  const chains = [
    { where: 'to a checkout in the victim’s home', inside: false },
    { where: 'back inside the same node_modules', inside: true },
  ];

  it.each(chains)(
    'a dependency linked through another user’s link $where, retargeted once the checks passed: their code never runs',
    async ({ inside }) => {
      const shared = stickyShared();
      const marks = stickyShared();
      const home = ownedDir(victim, 'lookup-chain-home');
      const config = join(home, '.config', 'yonder');
      const modules = join(config, 'node_modules');
      const go = join(marks, 'go');
      const checked = join(marks, 'checked');
      writeFiles(join(modules, 'yonder-backend-demo'), {
        'package.json': manifest('yonder-backend-demo', { dependencies: { 'demo-helper': '1' } }),
        // A lazy import, as ssh2 loads cpu-features: made when needed (here, once told to).
        'index.js': `import { existsSync, writeFileSync } from 'node:fs';
writeFileSync(${JSON.stringify(checked)}, '');
const deadline = Date.now() + 20000;
const later = () => existsSync(${JSON.stringify(go)}) || Date.now() > deadline
  ? import('demo-helper').catch(() => {})
  : new Promise((done) => setTimeout(done, 20)).then(later);
await later();
export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }
`,
      });
      writeFileSync(
        join(config, 'config.json'),
        JSON.stringify({ plugins: ['yonder-backend-demo'] }),
      );
      const real = inside ? join(modules, '.store') : join(home, 'work');
      writeFiles(join(real, 'demo-helper'), {
        'package.json': manifest('demo-helper'),
        'index.js': 'export {};\n',
      });
      // The attacker's "team" link, in a directory of theirs, leads to the victim's tree for now.
      const theirs = join(shared, 'team-links');
      writeFiles(join(theirs, 'evil', 'demo-helper'), {
        'package.json': manifest('demo-helper'),
        'index.js': markingModule(marks),
      });
      symlinkSync(real, join(theirs, 'team'));
      giveTo(attacker, theirs);
      symlinkSync(join(theirs, 'team', 'demo-helper'), join(modules, 'demo-helper'));
      giveTo(victim, home);
      execFileSync('chmod', ['-R', 'go-w', home]);
      let done = false;
      const running = runAs(victim, cli.bin, ['plugins', '--json'], {
        env: { HOME: home, YONDER_STATE_DIR: join(home, 'state') },
      }).finally(() => {
        done = true;
      });
      await until(() => done || existsSync(checked), 30_000, 'the plugin loaded or refused');
      if (existsSync(checked)) {
        asUser(attacker, ['ln', '-sfn', join(theirs, 'evil'), join(theirs, 'team')]);
        writeFileSync(go, '');
      }
      const result = await running;
      expect(result.code, result.stderr).toBe(0);
      expect(ran(marks)).toBe(false);
      const status = statusOf(result, 'yonder-backend-demo');
      expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
      // Refused at the attacker's directory the link passes through, naming them.
      expect(status.error).toContain(`${theirs} (owner ${attacker.name}`);
    },
  );

  it('a dependency of a bundled package linked out of the CLI’s installation, below a sticky directory: the optional require planted there never runs', async () => {
    const shared = stickyShared();
    const marks = stickyShared();
    const withSsh = installCli(['@yonder/backend-ssh']);
    onCleanup(() => withSsh.remove());
    const installed = join(withSsh.root, 'node_modules', 'ssh2');
    const moved = join(shared, 'ssh2');
    execFileSync('mv', [installed, moved]);
    chmodSync(moved, 0o755);
    symlinkSync(moved, installed);
    // Its own dependencies still come from the installation, linked in as pnpm links them.
    mkdirSync(join(moved, 'node_modules'));
    for (const dependency of ['asn1', 'bcrypt-pbkdf', 'safer-buffer', 'tweetnacl'])
      symlinkSync(
        join(withSsh.root, 'node_modules', dependency),
        join(moved, 'node_modules', dependency),
      );
    // ssh2 requires cpu-features when it is there (lib/protocol/constants.js).
    writeFiles(join(shared, 'node_modules', 'cpu-features'), {
      'package.json': JSON.stringify({ name: 'cpu-features', version: '9.9.9' }),
      'index.js': `require('node:fs').writeFileSync(${JSON.stringify(marks)} + '/ran-' + require('node:os').userInfo().username, '');
module.exports = () => ({});
`,
    });
    giveTo(attacker, join(shared, 'node_modules'));
    const state = ownedDir(victim, 'lookup-bundled-state');
    const env = { YONDER_STATE_DIR: join(state, 'state') };
    // ssh2 is loaded when a connection is first opened: a check of an ssh2 profile opens one.
    const add = ['profile', 'add', 'box', '--backend', 'ssh', '--host', '127.0.0.1'];
    await runAs(victim, withSsh.bin, [...add, '--transport', 'ssh2', '--force'], { env });
    await runAs(victim, withSsh.bin, ['profile', 'check', 'box', '--json'], { env });
    expect(ran(marks)).toBe(false);
    const result = await runAs(victim, withSsh.bin, ['plugins', '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    const status = statusOf(result, '@yonder/backend-ssh');
    expect(status, JSON.stringify(status)).toMatchObject({ ok: false, missing: false });
    expect(status.error).toContain(shared);
  });

  it('a plugin refused, then another loaded in the same process: the second is checked all over again, and the import planted for it never runs', async () => {
    const shared = stickyShared();
    const marks = stickyShared();
    const config = join(shared, 'victim', 'config');
    // Two plugins of the victim's; the second imports an optional extra that is not installed.
    writeFiles(join(config, 'node_modules', 'plug-a'), {
      'package.json': manifest('plug-a'),
      'index.js':
        'export function createYonderPlugin() { return { specificationVersion: "v1", backends: [] }; }\n',
    });
    writeFiles(join(config, 'node_modules', 'plug-b'), {
      'package.json': manifest('plug-b'),
      'index.js': `try { await import('optional-extra'); } catch {}
export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }
`,
    });
    writeFileSync(join(config, 'config.json'), JSON.stringify({ plugins: ['plug-a', 'plug-b'] }));
    giveTo(victim, join(shared, 'victim'));
    chmodSync(join(shared, 'victim'), 0o700);
    writeFiles(join(shared, 'node_modules', 'optional-extra'), {
      'package.json': manifest('optional-extra'),
      'index.js': markingModule(marks),
    });
    giveTo(attacker, join(shared, 'node_modules'));
    const state = ownedDir(victim, 'lookup-two-state');
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { YONDER_CONFIG: join(config, 'config.json'), YONDER_STATE_DIR: join(state, 'state') },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(ran(marks)).toBe(false);
    for (const name of ['plug-a', 'plug-b']) {
      const status = statusOf(result, name);
      expect(status, JSON.stringify(status)).toMatchObject({ ok: false, missing: false });
      expect(status.error).toContain(`${join(shared, 'node_modules')} (owner ${attacker.name}`);
    }
  });

  it('yonder ui loads @yonder/ui as it loads the bundled plugins: one planted above a CLI installed below a shared directory never runs', async () => {
    const shared = stickyShared();
    const marks = stickyShared();
    // A CLI installed without @yonder/ui, below a directory all may write to (as /scratch).
    const local = installCli([], shared);
    onCleanup(() => local.remove());
    writeFiles(join(shared, 'node_modules', '@yonder', 'ui'), {
      'package.json': manifest('@yonder/ui'),
      'index.js': `${markingModule(marks)}export async function startUi() { process.exit(0); }\n`,
    });
    giveTo(attacker, join(shared, 'node_modules'));
    const state = ownedDir(victim, 'lookup-ui-state');
    const result = await runAs(victim, local.bin, ['ui', '--no-open'], {
      env: { YONDER_STATE_DIR: join(state, 'state') },
    });
    expect(ran(marks)).toBe(false);
    expect(result.code).toBe(1);
    expect(result.stderr + result.stdout).toContain(
      `${join(shared, 'node_modules')} (owner ${attacker.name}`,
    );
  });

  it('a dangling link in a plugin’s node_modules (an old npm link) into a place others can create is refused', async () => {
    const shared = stickyShared();
    const config = ownedDir(victim, 'lookup-dangling');
    writeFiles(join(config, 'node_modules', 'plug-d'), {
      'package.json': manifest('plug-d'),
      'index.js':
        'export function createYonderPlugin() { return { specificationVersion: "v1", backends: [] }; }\n',
    });
    // Its optional helper, once linked from a checkout in a shared directory, since removed:
    // Node would load whatever another user puts there when the plugin asks for it.
    symlinkSync(join(shared, 'gone', 'dep'), join(config, 'node_modules', 'dep'));
    writeFileSync(join(config, 'config.json'), JSON.stringify({ plugins: ['plug-d'] }));
    giveTo(victim, config);
    const state = ownedDir(victim, 'lookup-dangling-state');
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { YONDER_CONFIG: join(config, 'config.json'), YONDER_STATE_DIR: join(state, 'state') },
    });
    expect(result.code, result.stderr).toBe(0);
    const status = statusOf(result, 'plug-d');
    expect(status, JSON.stringify(status)).toMatchObject({ ok: false, missing: false });
    expect(status.error).toContain(`${shared} (owner root (uid 0), mode 01777)`);
  });
});
