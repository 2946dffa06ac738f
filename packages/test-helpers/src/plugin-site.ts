/** A site that installed a built plugin as npm would: its copy beside @yonder/core, below no directory others can write. */
import { cpSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { installPackages } from './install-cli.js';
import { privateTempDir } from './private-dir.js';
import { onCleanup } from './test-users.js';

/**
 * A fresh private directory (privateTempDir) whose `node_modules` holds `@yonder/core` and a
 * copy of the built plugin in `pluginDir` (its package.json and dist), under its own name, as
 * `npm install` leaves them; removed by cleanupUsers.
 */
export function pluginSite(prefix: string, pluginDir: string): string {
  const site = privateTempDir(prefix);
  onCleanup(() => rmSync(site, { recursive: true, force: true }));
  installPackages(site, ['@yonder/core']);
  const { name } = JSON.parse(readFileSync(join(pluginDir, 'package.json'), 'utf8')) as {
    name: string;
  };
  const installed = join(site, 'node_modules', name);
  mkdirSync(installed, { recursive: true });
  cpSync(join(pluginDir, 'package.json'), join(installed, 'package.json'));
  cpSync(join(pluginDir, 'dist'), join(installed, 'dist'), { recursive: true });
  return site;
}
