import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../..', import.meta.url).pathname;

describe('a site that installs the CLI with only the Slurm backend', () => {
  it('gets local and slurm, and a message naming the package for the others', () => {
    const packs = mkdtempSync(join(tmpdir(), 'yonder-packs-'));
    const tarballs = ['core', 'store-fs', 'cli', 'backend-slurm'].map((name) => {
      const out = execFileSync('pnpm', ['pack', '--pack-destination', packs], {
        cwd: join(ROOT, 'packages', name),
        encoding: 'utf8',
      });
      return out.trim().split('\n').at(-1) as string;
    });
    const site = mkdtempSync(join(tmpdir(), 'yonder-site-install-'));
    writeFileSync(join(site, 'package.json'), JSON.stringify({ name: 'site', private: true }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs], {
      cwd: site,
      stdio: 'pipe',
      timeout: 180_000,
    });
    const installed = JSON.parse(readFileSync(join(site, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(installed.dependencies).sort()).toEqual([
      '@yonder/backend-slurm',
      '@yonder/cli',
      '@yonder/core',
      '@yonder/store-fs',
    ]);
    const env = {
      ...process.env,
      YONDER_STATE_DIR: join(site, 'state'),
      YONDER_CONFIG: '',
      XDG_CONFIG_HOME: join(site, 'config'),
      NO_COLOR: '1',
    };
    const yonder = (...args: string[]) =>
      spawnSync(join(site, 'node_modules', '.bin', 'yonder'), args, {
        encoding: 'utf8',
        env,
        cwd: site,
      });
    const plugins = yonder('plugins');
    expect(plugins.stdout).toMatch(/backend\s+slurm\s+@yonder\/backend-slurm/);
    expect(plugins.stdout).toContain('Not installed: @yonder/backend-ssh, @yonder/backend-command');
    expect(
      yonder('profile', 'add', 'hpc', '--backend', 'slurm', '--workdir', '/tmp/x').status,
    ).toBe(0);
    const ssh = yonder('profile', 'add', 'box', '--backend', 'ssh', '--host', 'somewhere');
    expect(ssh.status).toBe(1);
    expect(ssh.stderr).toContain(
      'No backend named "ssh". Available: local, slurm. Install it with: npm install @yonder/backend-ssh',
    );
    const id = yonder('submit', '--', 'echo', 'installed').stdout.trim();
    expect(yonder('wait', id).status).toBe(0);
    expect(yonder('logs', id).stdout).toBe('installed\n');
  }, 240_000);
});

describe('the profile JSON Schema', () => {
  it('is the one committed in schema/profile.schema.json (regenerate with: pnpm schema)', () => {
    const generated = execFileSync(
      process.execPath,
      [join(ROOT, 'packages/cli/dist/bin.js'), 'profile', 'schema'],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          YONDER_CONFIG: '',
          XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'yonder-noconfig-')),
        },
      },
    );
    expect(generated).toBe(readFileSync(join(ROOT, 'schema', 'profile.schema.json'), 'utf8'));
    const schema = JSON.parse(generated);
    expect(
      schema.allOf.map(
        (entry: { if: { properties: { backend: { const: string } } } }) =>
          entry.if.properties.backend.const,
      ),
    ).toEqual(['command', 'local', 'slurm', 'ssh']);
  });
});
