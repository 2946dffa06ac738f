import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostsEnv } from './test-support/hosts.js';

// The ssh2 transport as the CLI shows it: profile check's route and warnings, warnings once on
// stderr, and a failed login that ends the command at once rather than at sshd's
// LoginGraceTime (120 s on the test hosts: the runs below are killed long before that).

let env: Record<string, string>;
let state: string;

beforeAll(() => {
  requireCliBuild();
  env = hostsEnv();
  state = mkdtempSync(join(tmpdir(), 'yonder-ssh2-cli-'));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
});

function yonder(args: string[]) {
  return runCli(args, { state, timeoutMs: 90_000 });
}

async function addProfile(name: string, host: string, config: string): Promise<void> {
  const added = await yonder([
    'profile',
    'add',
    name,
    '--backend',
    'ssh',
    '--host',
    host,
    '--ssh-config',
    config,
    '--transport',
    'ssh2',
  ]);
  expect(added.code, added.stderr).toBe(0);
}

describe('yonder over the ssh2 transport', () => {
  it('profile check shows every hop of the route', async () => {
    await addProfile('chain', 'via-chain', env.YONDER_SSH_CONFIG as string);
    const check = await yonder(['profile', 'check', 'chain']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(
      /Route: +1\. yonder-test@127\.0\.0\.1:2201 \(target\) via tcp.*\nRoute: +2\. yonder-test@127\.0\.0\.1:2202 \(jump-chained\) via jump target.*\nRoute: +3\. yonder-test@127\.0\.0\.1:2201 \(via-chain\) via jump jump-chained/,
    );
    expect(check.stdout).toContain('Route:     transport = ssh2');
  }, 120_000);

  it('shows what the ssh config asks for that ssh2 ignores: in profile check, and once on stderr', async () => {
    const config = join(state, 'with-ignored');
    writeFileSync(
      config,
      `Host target\n  ForwardAgent yes\n  SendEnv LANG\nInclude ${env.YONDER_SSH_CONFIG}\n`,
    );
    await addProfile('ignored', 'target', config);
    const check = await yonder(['profile', 'check', 'ignored', '--json']);
    const document = JSON.parse(check.stdout);
    expect(document.result.warnings).toEqual([
      expect.stringContaining('ForwardAgent yes'),
      expect.stringContaining('SendEnv LANG'),
    ]);
    const submit = await yonder(['submit', '--profile', 'ignored', '--', 'true']);
    expect(submit.code, submit.stderr).toBe(0);
    const lines = submit.stderr.split('\n').filter((line) => line.includes('ForwardAgent'));
    expect(lines).toEqual([
      expect.stringMatching(/^yonder: warning: ssh config: ForwardAgent yes/),
    ]);
  }, 120_000);

  it('ends at once when it cannot log in: an encrypted key without an agent', async () => {
    await addProfile('locked', 'target-encrypted', env.YONDER_SSH_CONFIG as string);
    const run = await yonder(['submit', '--profile', 'locked', '--', 'true']);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('id_encrypted is encrypted');
    expect(run.ms).toBeLessThan(30_000);
  }, 120_000);

  it('ends at once when the server refuses the key', async () => {
    const key = join(state, 'stranger_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
    const config = join(state, 'with-stranger');
    writeFileSync(
      config,
      `Host target\n  IdentityFile ${key}\n  IdentitiesOnly yes\n  HostName 127.0.0.1\n  Port 2201\n  User yonder-test\n  UserKnownHostsFile ${env.YONDER_SSH_KNOWN_HOSTS}\n`,
    );
    await addProfile('stranger', 'target', config);
    const run = await yonder(['submit', '--profile', 'stranger', '--', 'true']);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /Authentication to yonder-test@127\.0\.0\.1:2201.* failed \(tried .*stranger_key\)/,
    );
    expect(run.ms).toBeLessThan(30_000);
  }, 120_000);
});
