import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const EXAMPLE = new URL('..', import.meta.url).pathname;
const BIN = new URL('../../../packages/cli/dist/bin.js', import.meta.url).pathname;

function yonder(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: '1', YONDER_PROFILE: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A directory with a config naming plugins, and a node_modules holding them (as `npm install` would). */
function site(plugins: unknown[]): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'yonder-site-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(EXAMPLE, join(dir, 'node_modules', 'yonder-backend-tsp'));
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
  return { YONDER_CONFIG: join(dir, 'config.json'), YONDER_STATE_DIR: join(dir, 'state') };
}

beforeAll(() => {
  if (spawnSync('tsp', ['-V']).error)
    throw new Error(
      'task-spooler (tsp) is not installed: apt-get install task-spooler (scripts/test-all.sh does it)',
    );
});

describe('the CLI loads a third-party backend by package name from the config file', () => {
  it('lists it, validates its options, and runs real jobs through it', async () => {
    const env = site(['yonder-backend-tsp']);
    const plugins = await yonder(['plugins'], env);
    expect(plugins.code, plugins.stderr).toBe(0);
    expect(plugins.stdout).toMatch(/backend\s+tsp\s+yonder-backend-tsp\s+0\.1\.0\s+v1/);
    const socket = join(tmpdir(), `yonder-tsp-cli-${process.pid}.sock`);
    expect(
      (
        await yonder(
          ['profile', 'add', 'q', '--backend', 'tsp', '--set', 'socket=relative.sock'],
          env,
        )
      ).stderr,
    ).toContain('options.socket: must be an absolute path');
    expect(
      (await yonder(['profile', 'add', 'q', '--backend', 'tsp', '--set', 'slots=lots'], env))
        .stderr,
    ).toContain('options.slots');
    const add = await yonder(
      ['profile', 'add', 'q', '--backend', 'tsp', '--set', `socket=${socket}`, '--set', 'slots=2'],
      env,
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
        env,
      )
    ).stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '30'], env)).code).toBe(9);
    expect((await yonder(['logs', id], env)).stdout).toBe("via tsp: $(x) 'y'\n");
    const schema = JSON.parse((await yonder(['profile', 'schema'], env)).stdout);
    expect(JSON.stringify(schema.allOf)).toContain('"const":"tsp"');
  }, 60_000);

  it('a broken or missing plugin is reported by name and breaks nothing else', async () => {
    const env = site(['yonder-backend-broken', 'yonder-backend-missing', 'yonder-backend-tsp']);
    const plugins = await yonder(['plugins'], env);
    expect(plugins.code).toBe(1);
    expect(plugins.stderr).toContain(
      'plugin yonder-backend-broken: Plugin "yonder-backend-broken" implements contract version "v7"; this @yonder/core supports v1.',
    );
    expect(plugins.stderr).toContain('plugin yonder-backend-missing: the package is not installed');
    expect(plugins.stdout).toMatch(/backend\s+tsp/);
    const local = await yonder(['submit', '--', 'true'], env);
    expect(local.code, local.stderr).toBe(0);
    const unknown = await yonder(['profile', 'add', 'x', '--backend', 'pbs'], env);
    expect(unknown.stderr).toContain('No backend named "pbs"');
    expect(unknown.stderr).toContain('Plugin yonder-backend-broken failed to load');
  }, 60_000);

  it('an invalid config file is an error naming the file and the field', async () => {
    const env = site([{ package: 'yonder-backend-tsp', option: {} }]);
    const result = await yonder(['plugins'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`The yonder config ${env.YONDER_CONFIG} is invalid`);
    expect(result.stderr).toContain('plugins.0');
  });
});
