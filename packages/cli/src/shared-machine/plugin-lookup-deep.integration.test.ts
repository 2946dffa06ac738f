/**
 * Issue 11, attack 3, one level down: a dependency of a plugin's dependency linked (as
 * `npm link` or `npm install <folder>` make, in npm's nested layout or pnpm's `.pnpm` store)
 * to a checkout below a directory others can write. Node resolves that package's own imports
 * from where the link really leads, so another user's package planted up that way would run
 * as the victim: the link is followed and its chain checked, as the first level's are.
 */
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

/** The plugin, in the config's directory where it belongs: it imports `demo-mid`. */
function writePlugin(modules: string): void {
  writeFiles(join(modules, 'yonder-backend-demo'), {
    'package.json': manifest('yonder-backend-demo', { dependencies: { 'demo-mid': '1' } }),
    'index.js': `import 'demo-mid';
export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }
`,
  });
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
      const shared = stickyShared();
      const marks = stickyShared();
      const home = ownedDir(victim, 'lookup-deep-home');
      const config = join(home, '.config', 'yonder');
      const modules = join(config, 'node_modules');
      writePlugin(modules);
      // The middle package: a real directory of the tree (pnpm: in the store, linked up).
      const mid = nested.startsWith('.pnpm')
        ? join(modules, '.pnpm', 'demo-mid@1.0.0', 'node_modules', 'demo-mid')
        : join(modules, 'demo-mid');
      writeFiles(mid, {
        'package.json': manifest('demo-mid', { dependencies: { 'demo-helper': '1' } }),
        'index.js': "import 'demo-helper';\n",
      });
      if (nested.startsWith('.pnpm')) symlinkSync(mid, join(modules, 'demo-mid'));
      // Its dependency: a link to the victim's checkout in the shared directory.
      const checkout = join(shared, 'victim-work', 'demo-helper');
      writeFiles(checkout, {
        'package.json': manifest('demo-helper'),
        'index.js': "try { await import('demo-optional'); } catch {}\n",
      });
      giveTo(victim, join(shared, 'victim-work'));
      execFileSync('chmod', ['-R', 'go-w', join(shared, 'victim-work')]);
      writeFiles(join(modules, nested), {});
      symlinkSync(checkout, join(modules, nested, 'demo-helper'));
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
      expect(ranAs(victim, marks)).toBe(false);
      const status = statusOf(result, 'yonder-backend-demo');
      expect(status, JSON.stringify(status)).toMatchObject({ ok: false });
      expect(status.error).toContain(shared);
    },
  );

  it('the same tree with the checkout somewhere private loads, nothing refused', async () => {
    const marks = stickyShared();
    const home = ownedDir(victim, 'lookup-deep-fine');
    const config = join(home, '.config', 'yonder');
    const modules = join(config, 'node_modules');
    writePlugin(modules);
    writeFiles(join(modules, 'demo-mid'), {
      'package.json': manifest('demo-mid', { dependencies: { 'demo-helper': '1' } }),
      'index.js': "import 'demo-helper';\n",
    });
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
