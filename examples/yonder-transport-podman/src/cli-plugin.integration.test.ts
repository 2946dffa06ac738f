/**
 * The CLI loads the podman transport by package name from the config file and runs real jobs
 * in a container with the workstation (ssh) backend over it: submit, wait, logs byte-exact,
 * cancel, rm.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupUsers, pluginSite, requireCliBuild, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { podman, startContainer } from './test-container.js';

const EXAMPLE = new URL('..', import.meta.url).pathname;

let site = '';
let container = '';

function yonder(args: string[]) {
  return runCli(args, {
    state: join(site, 'state'),
    cwd: site,
    env: { YONDER_CONFIG: join(site, 'config.json') },
    timeoutMs: 120_000,
  });
}

beforeAll(() => {
  requireCliBuild();
  site = pluginSite('yonder-podman-site', EXAMPLE);
  writeFileSync(
    join(site, 'config.json'),
    JSON.stringify({ plugins: ['yonder-transport-podman'] }),
  );
  container = startContainer('cli');
});
afterAll(() => cleanupUsers());

describe('a container reached through the podman transport plugin', () => {
  it('is listed, and a profile naming a bad container or option is refused naming the field', async () => {
    const plugins = await yonder(['plugins']);
    expect(plugins.code, plugins.stderr).toBe(0);
    expect(plugins.stdout).toMatch(/transport\s+podman\s+yonder-transport-podman\s+0\.1\.0/);
    const option = await yonder([
      'profile',
      'add',
      'bad',
      '--backend',
      'ssh',
      '--host',
      container,
      '--transport',
      'podman',
      '--transport-set',
      'podman=relative/podman',
    ]);
    expect(option.code).not.toBe(0);
    expect(option.stderr).toContain('transportOptions.podman');
  });

  it('runs jobs: hostile argv byte-exact in the log, exit codes, cancel and rm', async () => {
    const add = await yonder([
      'profile',
      'add',
      'box',
      '--backend',
      'ssh',
      '--host',
      container,
      '--transport',
      'podman',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const check = await yonder(['profile', 'check', 'box']);
    expect(check.code, check.stdout + check.stderr).toBe(0);

    const hostile = [
      '$(touch /tmp/pwned) \'q\' "dq"',
      '; echo injected',
      'new\nline',
      '-n',
      'ünï ✓',
    ];
    const submitted = await yonder([
      'submit',
      '--profile',
      'box',
      '--',
      'sh',
      '-c',
      'for a in "$@"; do printf "[%s]\\n" "$a"; done; cat /etc/yonder-image >/dev/null; exit 7',
      'sh',
      ...hostile,
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    const waited = await yonder(['wait', id, '--timeout', '90']);
    expect(waited.code, waited.stdout + waited.stderr).toBe(7);
    const status = JSON.parse((await yonder(['status', id, '--json'])).stdout).result[0];
    expect([status.state, status.exitCode]).toEqual(['failed', 7]);
    const logs = await yonder(['logs', id]);
    expect(logs.stdout).toBe(hostile.map((value) => `[${value}]\n`).join(''));
    // Nothing of the argv was run by a shell, in the container or here.
    expect(podman(['exec', container, 'test', '-e', '/tmp/pwned']).status).toBe(1);

    const long = (await yonder(['submit', '--profile', 'box', '--', 'sleep', '600'])).stdout.trim();
    // busybox's kill took `--` for a pid and failed after sending: the cancel was reported as
    // reaching nothing, and the job recorded failed by SIGTERM instead of cancelled.
    const cancelled = await yonder(['cancel', long, '--json']);
    expect(
      JSON.parse(cancelled.stdout).result[0].state,
      `${cancelled.stdout}${cancelled.stderr}`,
    ).toBe('cancelled');
    // The job's processes are gone from the container.
    const left = podman(['exec', container, 'sh', '-c', 'ps -o args | grep -c "^sleep 600"']);
    expect(left.stdout.trim()).toBe('0');

    const removed = await yonder(['rm', id, long]);
    expect(removed.code, removed.stderr).toBe(0);
    const gone = podman([
      'exec',
      container,
      'sh',
      '-c',
      'ls "$HOME/.yonder/jobs" 2>/dev/null | wc -l',
    ]);
    expect(gone.stdout.trim()).toBe('0');
  }, 240_000);

  it('the README: its config and its commands, run as written (the container named box there is this test’s)', async () => {
    const readme = readFileSync(join(EXAMPLE, 'README.md'), 'utf8');
    const config = /```json\n(.*)\n```/.exec(readme)?.[1] ?? '';
    expect(JSON.parse(config)).toEqual({ plugins: ['yonder-transport-podman'] });
    const commands = (/```sh\n([^`]*)```/.exec(readme)?.[1] ?? '')
      .split('\n')
      .filter((line) => line.startsWith('yonder '));
    expect(commands.length).toBeGreaterThanOrEqual(4);
    const state = join(site, 'readme-state');
    for (const line of commands) {
      const args = line.split(' ').slice(1);
      const hostAt = args.indexOf('--host');
      if (hostAt >= 0) args[hostAt + 1] = container;
      const result = await runCli(args, {
        state,
        cwd: site,
        env: { YONDER_CONFIG: join(site, 'config.json') },
        timeoutMs: 120_000,
      });
      expect(result.code, `${line}: ${result.stdout}${result.stderr}`).toBe(0);
    }
  }, 240_000);
});
