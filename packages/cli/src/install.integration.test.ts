import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPOSITORY_ROOT as ROOT, requireCliBuild, runCli } from '@yonder/test-helpers';
import { beforeAll, describe, expect, it } from 'vitest';

beforeAll(() => requireCliBuild());

describe('a site that installs the CLI with only the Slurm backend', () => {
  it('gets local and slurm, and a message naming the package for the others', async () => {
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
    // The installed `yonder`, run as a user of the site would.
    const yonder = (...args: string[]) =>
      runCli(args, {
        bin: join(site, 'node_modules', '.bin', 'yonder'),
        state: join(site, 'state'),
        cwd: site,
      });
    const plugins = await yonder('plugins');
    expect(plugins.stdout).toMatch(/backend\s+slurm\s+@yonder\/backend-slurm/);
    expect(plugins.stdout).toContain('Not installed: @yonder/backend-ssh, @yonder/backend-command');
    expect(
      (await yonder('profile', 'add', 'hpc', '--backend', 'slurm', '--workdir', '/tmp/x')).code,
    ).toBe(0);
    const ssh = await yonder('profile', 'add', 'box', '--backend', 'ssh', '--host', 'somewhere');
    expect(ssh.code).toBe(1);
    expect(ssh.stderr).toContain(
      'No backend named "ssh". Available: local, slurm. Install it with: npm install @yonder/backend-ssh',
    );
    const ui = await yonder('ui', '--no-open');
    expect(ui.code).toBe(1);
    expect(ui.stderr).toContain('needs the package @yonder/ui, which is not installed');
    expect(ui.stderr).toContain('npm install @yonder/ui');
    const id = (await yonder('submit', '--', 'echo', 'installed')).stdout.trim();
    expect((await yonder('wait', id)).code).toBe(0);
    expect((await yonder('logs', id)).stdout).toBe('installed\n');
  }, 240_000);
});

describe('the profile JSON Schema', () => {
  it('is the one committed in schema/profile.schema.json (regenerate with: pnpm schema)', async () => {
    const state = mkdtempSync(join(tmpdir(), 'yonder-schema-'));
    const run = await runCli(['profile', 'schema'], { state });
    expect(run.code, run.stderr).toBe(0);
    const generated = run.stdout;
    expect(generated).toBe(readFileSync(join(ROOT, 'schema', 'profile.schema.json'), 'utf8'));
    const schema = JSON.parse(generated);
    expect(
      schema.allOf.map(
        (entry: { if: { properties: { backend: { const: string } } } }) =>
          entry.if.properties.backend.const,
      ),
    ).toEqual(['command', 'gridengine', 'local', 'slurm', 'ssh']);
  });
});
