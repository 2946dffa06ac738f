/**
 * Issue 11, attack 3, one level down: a dependency of a plugin's dependency linked (as
 * `npm link` or `npm install <folder>` make, in npm's nested layout or pnpm's `.pnpm` store)
 * to a checkout below a directory others can write. Node resolves that package's own imports
 * from where the link really leads, so another user's package planted up that way would run
 * as the victim: the link is followed and its chain checked, as the first level's are. Also the
 * scan's shortcuts (review of 1168d8e): a link whose text stays inside the tree but passes a
 * link the scan never reads (one in a package's own directory), and a link nested deeper than
 * the scan goes.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  cleanupUsers,
  type InstalledCli,
  ownedDir,
  runAs,
  type TestUser,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  giveTo,
  manifest,
  markingModule,
  plantOptional,
  ranAs,
  statusOf,
  stickyShared,
  writeFiles,
} from './lookup-fixtures.js';

let victim: TestUser;
let attacker: TestUser;
let cli: InstalledCli;

beforeAll(() => {
  ({ victim, attacker, cli } = usersWithCli());
});
afterAll(() => cleanupUsers());

/** A package `name` in `dir` that imports `next` (or nothing). */
function importing(dir: string, name: string, next?: string): void {
  writeFiles(join(dir, name), {
    'package.json': manifest(name, next ? { dependencies: { [next]: '1' } } : {}),
    'index.js': `${next ? `import '${next}';\n` : ''}export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }\n`,
  });
}

/**
 * The victim's config with the plugin `yonder-backend-demo` (importing `first`), built by
 * `build(modules)`, and the victim's checkout `demo-helper` in a sticky shared directory whose
 * `node_modules` the attacker fills: what `yonder plugins --json` said, and whether it ran.
 */
async function attack(first: string, build: (modules: string, checkout: string) => void) {
  const shared = stickyShared();
  const marks = stickyShared();
  const home = ownedDir(victim, 'lookup-lexical-home');
  const config = join(home, '.config', 'yonder');
  const modules = join(config, 'node_modules');
  importing(modules, 'yonder-backend-demo', first);
  const work = join(shared, 'victim-work');
  writeFiles(join(work, 'demo-helper'), {
    'package.json': manifest('demo-helper'),
    'index.js': "try { await import('demo-optional'); } catch {}\n",
  });
  giveTo(victim, work);
  execFileSync('chmod', ['-R', 'go-w', work]);
  build(modules, work);
  writeFileSync(join(config, 'config.json'), JSON.stringify({ plugins: ['yonder-backend-demo'] }));
  giveTo(victim, home);
  plantOptional(attacker, shared, marks);
  const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
    env: { HOME: home, YONDER_STATE_DIR: join(home, 'state') },
  });
  expect(result.code, result.stderr).toBe(0);
  return { status: statusOf(result, 'yonder-backend-demo'), ran: ranAs(victim, marks), shared };
}

/** Where, below the plugin's `node_modules`, the middle package keeps its own dependencies. */
const layouts = [
  { layout: 'npm’s nested node_modules', nested: 'demo-mid/node_modules' },
  { layout: 'pnpm’s .pnpm store', nested: '.pnpm/demo-mid@1.0.0/node_modules' },
];

describe('plugin lookup, a dependency of a dependency', () => {
  it.each(layouts)(
    'linked to a checkout below a sticky directory ($layout): its optional import, planted there, never runs',
    async ({ nested }) => {
      const { status, ran, shared } = await attack('demo-mid', (modules, work) => {
        // The middle package: a real directory of the tree (pnpm: in the store, linked up).
        const store = nested.startsWith('.pnpm');
        const mid = store ? join(modules, '.pnpm', 'demo-mid@1.0.0', 'node_modules') : modules;
        importing(mid, 'demo-mid', 'demo-helper');
        if (store) symlinkSync(join(mid, 'demo-mid'), join(modules, 'demo-mid'));
        // Its dependency: a link to the victim's checkout in the shared directory.
        writeFiles(join(modules, nested), {});
        symlinkSync(join(work, 'demo-helper'), join(modules, nested, 'demo-helper'));
      });
      expect(ran).toBe(false);
      expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
      expect(status.error).toContain(shared);
    },
  );

  it('the same tree with the checkout somewhere private loads, nothing refused', async () => {
    const marks = stickyShared();
    const home = ownedDir(victim, 'lookup-deep-fine');
    const config = join(home, '.config', 'yonder');
    const modules = join(config, 'node_modules');
    importing(modules, 'yonder-backend-demo', 'demo-mid');
    importing(modules, 'demo-mid', 'demo-helper');
    const checkout = join(home, 'work', 'demo-helper');
    writeFiles(checkout, {
      'package.json': manifest('demo-helper'),
      'index.js': markingModule(marks),
    });
    writeFiles(join(modules, 'demo-mid', 'node_modules'), {});
    symlinkSync(checkout, join(modules, 'demo-mid', 'node_modules', 'demo-helper'));
    writeFileSync(
      join(config, 'config.json'),
      JSON.stringify({ plugins: ['yonder-backend-demo'] }),
    );
    giveTo(victim, home);
    execFileSync('chmod', ['-R', 'go-w', home]);
    const result = await runAs(victim, cli.bin, ['plugins', '--json'], {
      env: { HOME: home, YONDER_STATE_DIR: join(home, 'state') },
    });
    expect(result.code, result.stderr).toBe(0);
    const status = statusOf(result, 'yonder-backend-demo');
    expect(status, JSON.stringify(status)).toMatchObject({ ok: true });
    expect(ranAs(victim, marks)).toBe(true);
  });
});

/** `demo-mid/node_modules/demo-helper` a relative link `text`, past `demo-mid/vendor`, a link to the checkout's directory `work` (a link the scan never reads: not in a node_modules). */
function pastLink(text: string) {
  return (modules: string, work: string): void => {
    importing(modules, 'demo-mid', 'demo-helper');
    mkdirSync(join(work, 'deep'));
    symlinkSync(work, join(modules, 'demo-mid', 'vendor'));
    mkdirSync(join(modules, 'demo-mid', 'node_modules'));
    symlinkSync(text, join(modules, 'demo-mid', 'node_modules', 'demo-helper'));
  };
}

/** `demo-mid/node_modules` a link to a directory (in demo-mid, or beside the tree) that holds a link to the checkout. */
function linkedModules(inside: boolean) {
  return (modules: string, work: string): void => {
    importing(modules, 'demo-mid', 'demo-helper');
    const deps = inside ? join(modules, 'demo-mid', 'deps') : join(dirname(modules), 'deps');
    mkdirSync(deps);
    symlinkSync(join(work, 'demo-helper'), join(deps, 'demo-helper'));
    symlinkSync(inside ? 'deps' : deps, join(modules, 'demo-mid', 'node_modules'));
  };
}

const shortcuts = [
  {
    how: 'a relative link past a link in a package’s own directory',
    plant: pastLink('../vendor/demo-helper'),
  },
  {
    how: 'the same, back up with .. after that link',
    plant: pastLink('../vendor/deep/../demo-helper'),
  },
  {
    how: 'the same, .. after that link to a real directory the text also names in the tree',
    plant: (modules: string, work: string): void => {
      pastLink('../vendor/../victim-work/demo-helper')(modules, work);
      // A decoy: what the text spells, read letter by letter, is a real directory in the tree.
      writeFiles(join(modules, 'demo-mid', 'victim-work', 'demo-helper'), {
        'package.json': manifest('demo-helper'),
        'index.js': '',
      });
    },
  },
  {
    how: 'a package’s node_modules a link inside the tree, holding a link',
    plant: linkedModules(true),
  },
  {
    how: 'a package’s node_modules a link to a private directory, holding a link',
    plant: linkedModules(false),
  },
];

describe('plugin lookup, links the deep scan took for staying inside the tree', () => {
  it.each(shortcuts)(
    '$how, to the shared checkout: refused, nothing of theirs runs',
    async ({ plant }) => {
      const { status, ran, shared } = await attack('demo-mid', plant);
      expect(ran).toBe(false);
      expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
      expect(status.error).toContain(shared);
    },
  );

  it('a link nested deeper than the scan goes (33 levels of npm’s nesting): refused, nothing of theirs runs', async () => {
    const levels = 33;
    const { status, ran } = await attack('m1', (modules, work) => {
      let dir = modules;
      for (let level = 1; level <= levels; level += 1) {
        importing(dir, `m${level}`, level < levels ? `m${level + 1}` : 'demo-helper');
        dir = join(dir, `m${level}`, 'node_modules');
      }
      mkdirSync(dir);
      symlinkSync(join(work, 'demo-helper'), join(dir, 'demo-helper'));
    });
    expect(ran).toBe(false);
    expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
  });
});
