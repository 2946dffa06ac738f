import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupUsers, pluginSite, requireCliBuild, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const EXAMPLE = new URL('..', import.meta.url).pathname;

interface Site {
  dir: string;
  config: string;
}

function yonder(args: string[], site: Site) {
  return runCli(args, {
    state: join(site.dir, 'state'),
    cwd: site.dir,
    env: { YONDER_CONFIG: site.config },
  });
}

/**
 * A directory with a config naming plugins, and a node_modules holding them as `npm install`
 * would (copies, with @yonder/core beside them), below no directory others can write: yonder
 * refuses a plugin installed below /tmp.
 */
function site(plugins: unknown[]): Site {
  const dir = pluginSite('yonder-site', EXAMPLE);
  const bad = join(dir, 'node_modules', 'yonder-backend-broken');
  mkdirSync(bad);
  writeFileSync(
    join(bad, 'package.json'),
    JSON.stringify({
      name: 'yonder-backend-broken',
      version: '9.9.9',
      type: 'module',
      main: 'index.js',
    }),
  );
  writeFileSync(
    join(bad, 'index.js'),
    "export function createYonderPlugin() { return { specificationVersion: 'v7', backends: [] }; }\n",
  );
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ plugins }));
  return { dir, config: join(dir, 'config.json') };
}

afterAll(() => cleanupUsers());

beforeAll(() => {
  requireCliBuild();
  if (spawnSync('tsp', ['-V']).error)
    throw new Error(
      'task-spooler (tsp) is not installed: apt-get install task-spooler (scripts/test-all.sh does it)',
    );
});

describe('the CLI loads a third-party backend by package name from the config file', () => {
  it('lists it, validates its options, and runs real jobs through it', async () => {
    const place = site(['yonder-backend-tsp']);
    const plugins = await yonder(['plugins'], place);
    expect(plugins.code, plugins.stderr).toBe(0);
    expect(plugins.stdout).toMatch(/backend\s+tsp\s+yonder-backend-tsp\s+0\.1\.0\s+v1/);
    const socket = join(tmpdir(), `yonder-tsp-cli-${process.pid}.sock`);
    expect(
      (
        await yonder(
          ['profile', 'add', 'q', '--backend', 'tsp', '--set', 'socket=relative.sock'],
          place,
        )
      ).stderr,
    ).toContain('options.socket: must be an absolute path');
    expect(
      (await yonder(['profile', 'add', 'q', '--backend', 'tsp', '--set', 'slots=lots'], place))
        .stderr,
    ).toContain('options.slots');
    const add = await yonder(
      ['profile', 'add', 'q', '--backend', 'tsp', '--set', `socket=${socket}`, '--set', 'slots=2'],
      place,
    );
    expect(add.code, add.stderr).toBe(0);
    const id = (
      await yonder(
        [
          'submit',
          '--profile',
          'q',
          '--',
          'sh',
          '-c',
          'echo "via tsp: $1"; exit 9',
          'sh',
          "$(x) 'y'",
        ],
        place,
      )
    ).stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '30'], place)).code).toBe(9);
    expect((await yonder(['logs', id], place)).stdout).toBe("via tsp: $(x) 'y'\n");
    const schema = JSON.parse((await yonder(['profile', 'schema'], place)).stdout);
    expect(JSON.stringify(schema.allOf)).toContain('"const":"tsp"');
  }, 60_000);

  it('a broken or missing plugin is reported by name and breaks nothing else', async () => {
    const place = site(['yonder-backend-broken', 'yonder-backend-missing', 'yonder-backend-tsp']);
    const plugins = await yonder(['plugins'], place);
    expect(plugins.code).toBe(1);
    expect(plugins.stderr).toContain(
      'plugin yonder-backend-broken: Plugin "yonder-backend-broken" implements contract version "v7"; this @yonder/core supports v1.',
    );
    expect(plugins.stderr).toContain('plugin yonder-backend-missing: the package is not installed');
    expect(plugins.stdout).toMatch(/backend\s+tsp/);
    const local = await yonder(['submit', '--', 'true'], place);
    expect(local.code, local.stderr).toBe(0);
    const unknown = await yonder(['profile', 'add', 'x', '--backend', 'pbs'], place);
    expect(unknown.stderr).toContain('No backend named "pbs"');
    expect(unknown.stderr).toContain('Plugin yonder-backend-broken failed to load');
  }, 60_000);

  it('an invalid config file is an error naming the file and the field', async () => {
    const place = site([{ package: 'yonder-backend-tsp', option: {} }]);
    const result = await yonder(['plugins'], place);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`The yonder config ${place.config} is invalid`);
    expect(result.stderr).toContain('plugins.0');
  });
});
