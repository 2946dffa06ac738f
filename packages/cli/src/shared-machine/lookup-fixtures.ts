/** What the plugin-lookup attacks are built from: shared sticky directories, packages written and given to a user, a module that marks who ran it, and what `yonder plugins --json` said. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonOf, ownedDir, rootDir, type runAs, type TestUser } from '@yonder/test-helpers';

/** A shared directory as /tmp is: root's, sticky, open to all (a stand-in, to leave /tmp alone). */
export const stickyShared = (): string => rootDir('review-sticky', 0o1777);

/** Give everything under `dir` (links themselves included) to `user`, as if they had made it. */
export function giveTo(user: TestUser, dir: string): void {
  execFileSync('chown', ['-hR', `${user.uid}:${user.gid}`, dir]);
}

/** Write `files` (name → text) into `dir`, made with its parents. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
}

/** ESM source that leaves `<marks>/ran-<user>` when it runs, naming whoever ran it. */
export function markingModule(marks: string): string {
  return `import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
writeFileSync(${JSON.stringify(marks)} + '/ran-' + userInfo().username, '');
export function createYonderPlugin() { return { specificationVersion: 'v1', backends: [] }; }
`;
}

/** Whether a marking module ran as `user`. */
export function ranAs(user: TestUser, marks: string): boolean {
  return existsSync(join(marks, `ran-${user.name}`));
}

/** A package.json for an ESM package `name` whose entry is index.js. */
export function manifest(name: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    name,
    version: '1.0.0',
    type: 'module',
    exports: './index.js',
    ...extra,
  });
}

/** What `yonder plugins --json` reported for `name`. */
export function statusOf(result: Awaited<ReturnType<typeof runAs>>, name: string) {
  return jsonOf(result).result.plugins.find((entry: { package: string }) => entry.package === name);
}

/**
 * A script of `user`'s own with an effect (here, leaving a mark), in a private directory:
 * what the attacker points a link at. Any file of the victim's or root's would do.
 */
export function ownScript(user: TestUser, marks: string): string {
  const dir = ownedDir(user, 'lookup-own-script');
  writeFileSync(join(dir, 'clean-scratch.mjs'), markingModule(marks));
  giveTo(user, dir);
  return join(dir, 'clean-scratch.mjs');
}

/** The attacker's `demo-optional` in `shared`'s node_modules: a module that marks who ran it. */
export function plantOptional(attacker: TestUser, shared: string, marks: string): void {
  writeFiles(join(shared, 'node_modules', 'demo-optional'), {
    'package.json': manifest('demo-optional'),
    'index.js': markingModule(marks),
  });
  giveTo(attacker, join(shared, 'node_modules'));
}
