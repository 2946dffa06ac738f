/**
 * `bash scripts/install.sh`, as a user runs it once: from a clean HOME, into a prefix whose name
 * a shell would take apart, `yonder` then runs from any directory in a new login shell, with its
 * completion; installed again with fewer backends, only those are left. Bad settings are refused
 * before anything is done.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { privateTempDir, REPOSITORY_ROOT as ROOT, requireCliBuild } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let scratch = '';
beforeAll(() => {
  requireCliBuild();
  scratch = privateTempDir('yonder-install-script-');
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function install(env: Record<string, string>) {
  // This process's environment (npm needs its certificate settings to reach the registry),
  // without the install's own settings unless a case sets them.
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base.YONDER_PREFIX;
  delete base.YONDER_PACKAGES;
  return spawnSync('bash', [join(ROOT, 'scripts', 'install.sh')], {
    // The suite's own build is current (requireCliBuild): not built again under running tests.
    env: { ...base, YONDER_INSTALL_PREBUILT: '1', ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 600_000,
  });
}

/** A new login shell of that HOME, started with nothing of this process's environment. */
function login(home: string, script: string) {
  return spawnSync('env', ['-i', `HOME=${home}`, 'PATH=/usr/bin:/bin', 'bash', '-lc', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('scripts/install.sh', () => {
  it('puts yonder on the PATH of a new login shell, from a clean HOME, in a prefix with quotes and $() in its name', () => {
    const home = join(scratch, 'home');
    mkdirSync(home, { mode: 0o700 });
    const prefix = join(scratch, `pre 'q' $(touch pwned) ;x`);
    const done = install({ HOME: home, YONDER_PREFIX: prefix });
    expect(done.status, done.stderr).toBe(0);
    const used = login(
      home,
      'cd / && command -v yonder && yonder --version && yonder plugins && eval "$(yonder completion bash)" && complete -p yonder',
    );
    expect(used.status, used.stdout + used.stderr).toBe(0);
    expect(used.stdout).toContain(join(prefix, 'bin', 'yonder'));
    expect(used.stdout).toMatch(/backend\s+ssh\s+@yonder\/backend-ssh/);
    expect(used.stdout).toMatch(/backend\s+slurm\s+@yonder\/backend-slurm/);
    expect(used.stdout).toContain('complete -F');
    // A job from another directory, into the default ledger of that HOME.
    const job = login(
      home,
      'cd /tmp && id=$(yonder submit -- echo installed) && yonder wait "$id" >/dev/null && yonder logs "$id"',
    );
    expect(job.stdout, job.stderr).toBe('installed\n');
    // Nothing of the prefix's name was run by a shell.
    expect(readdirSync(scratch)).not.toContain('pwned');
    expect(existsSync(join(home, 'pwned'))).toBe(false);

    // Again, with only the Slurm backend: that is what is left, and PATH is set up once.
    const again = install({
      HOME: home,
      YONDER_PREFIX: prefix,
      YONDER_PACKAGES: '@yonder/backend-slurm',
    });
    expect(again.status, again.stderr).toBe(0);
    expect(readdirSync(join(prefix, 'lib', 'yonder', 'node_modules', '@yonder')).sort()).toEqual([
      'backend-slurm',
      'cli',
      'core',
      'store-fs',
    ]);
    const profile = readFileSync(join(home, '.profile'), 'utf8');
    expect(profile.split('scripts/install.sh').length - 1).toBe(1);
    const plugins = login(home, 'cd / && yonder plugins');
    expect(plugins.stdout).toMatch(/backend\s+slurm/);
    expect(plugins.stdout).not.toMatch(/backend\s+ssh\s/);
  }, 900_000);

  it.each([
    [{ YONDER_PREFIX: 'relative/dir' }, 'YONDER_PREFIX must be an absolute path'],
    [{ YONDER_PREFIX: '/tmp/a:b' }, 'cannot hold a line break or a colon'],
    [{ YONDER_PREFIX: '/tmp/a\nb' }, 'cannot hold a line break or a colon'],
    [{ YONDER_PACKAGES: '@yonder/backend-pbs' }, 'YONDER_PACKAGES names @yonder/backend-pbs'],
  ])('refuses %o before doing anything', (env, message) => {
    const home = join(scratch, `refused-${Math.random().toString(16).slice(2)}`);
    mkdirSync(home, { mode: 0o700 });
    const refused = install({ HOME: home, ...env });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(message);
    expect(readdirSync(home)).toEqual([]);
  });
});
