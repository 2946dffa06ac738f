import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  cleanupUsers,
  pluginSite,
  REPOSITORY_ROOT as ROOT,
  requireCliBuild,
  runCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PACKAGE = join(ROOT, 'docs', '.snippets', 'yonder-backend-echo');

/** The ```ts blocks of docs/plugins.md that start with `// file: <path>`. */
function snippets(): Map<string, string> {
  const text = readFileSync(join(ROOT, 'docs', 'plugins.md'), 'utf8');
  const files = new Map<string, string>();
  for (const block of text.split('```ts\n').slice(1)) {
    const body = block.slice(0, block.indexOf('```'));
    const match = /^\/\/ file: (\S+)\n/.exec(body);
    if (match) files.set(match[1] as string, body);
  }
  return files;
}

beforeAll(() => {
  requireCliBuild();
  // The snippets become a real package inside the repository, so @yonder/core resolves.
  rmSync(PACKAGE, { recursive: true, force: true });
  for (const [file, body] of snippets()) {
    mkdirSync(dirname(join(PACKAGE, file)), { recursive: true });
    writeFileSync(join(PACKAGE, file), body);
  }
  writeFileSync(
    join(PACKAGE, 'package.json'),
    JSON.stringify({
      name: 'yonder-backend-echo',
      version: '1.0.0',
      type: 'module',
      exports: { '.': './dist/index.js' },
    }),
  );
  writeFileSync(
    join(PACKAGE, 'vitest.config.mjs'),
    "export default { test: { include: ['src/**/*.test.ts'], testTimeout: 60000 } };\n",
  );
  execFileSync(
    join(ROOT, 'node_modules', '.bin', 'tsup'),
    ['src/index.ts', '--format', 'esm', '--target', 'node20', '--silent'],
    { cwd: PACKAGE, stdio: 'pipe' },
  );
}, 60_000);

afterAll(() => {
  rmSync(join(ROOT, 'docs', '.snippets'), { recursive: true, force: true });
  cleanupUsers();
});

describe('docs/plugins.md', () => {
  it('has the backend, the entry point and the conformance test', () => {
    expect([...snippets().keys()]).toEqual([
      'src/echo-backend.ts',
      'src/index.ts',
      'src/echo-backend.test.ts',
    ]);
  });

  it('the three-line conformance test passes', () => {
    const result = spawnSync(
      join(ROOT, 'node_modules', '.bin', 'vitest'),
      ['run', '--config', 'vitest.config.mjs'],
      {
        cwd: PACKAGE,
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout.replace(/\u001b\[[0-9;]*m/g, '')).toMatch(/Tests\s+11 passed \(11\)/);
  }, 150_000);

  it('the CLI loads the plugin by package name from the config and runs jobs through it', async () => {
    // Installed as npm would: a copy beside its dependency, below no directory all may write to.
    const site = pluginSite('yonder-doc-site', PACKAGE);
    writeFileSync(join(site, 'config.json'), JSON.stringify({ plugins: ['yonder-backend-echo'] }));
    const run = (...args: string[]) =>
      runCli(args, {
        state: join(site, 'state'),
        cwd: site,
        env: { YONDER_CONFIG: join(site, 'config.json') },
      });
    expect((await run('plugins')).stdout).toMatch(
      /backend\s+echo\s+yonder-backend-echo\s+1\.0\.0\s+v1/,
    );
    expect((await run('profile', 'add', 'e', '--backend', 'echo')).code).toBe(0);
    const id = (
      await run(
        'submit',
        '--profile',
        'e',
        '--',
        'sh',
        '-c',
        'echo "echoed $1"; exit 2',
        'sh',
        '$(x)',
      )
    ).stdout.trim();
    const wait = await run('wait', id);
    expect(wait.code).toBe(2);
    expect((await run('logs', id)).stdout).toBe('echoed $(x)\n');
  });
});
