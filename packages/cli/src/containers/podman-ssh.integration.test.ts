/** Jobs in real podman containers on the ssh backend (the sshd test host's user, rootless podman), with the container given as the profile's default: binds, settings, secrets, cancel, refusals checked on the target. */
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cleanupUsers,
  lookUp,
  onCleanup,
  requireCliBuild,
  runCli,
  sshHostsEnv,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IMAGE_MARKER,
  imageId,
  requirePodman,
  runningContainers,
  TEST_IMAGE,
} from './container-test-kit.js';

let state: string;
let remoteUser: string;
let remote: { uid: number; gid: number; home: string };

const yonder = (args: string[], env: Record<string, string> = {}) =>
  runCli(args, { state, env, timeoutMs: 120_000 });

/** A directory of the ssh host's user (the target is this machine), removed afterwards. */
function remoteDir(name: string): string {
  const dir = mkdtempSync(join(remote.home, `yonder-containers-${name}-`));
  chownSync(dir, remote.uid, remote.gid);
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

beforeAll(async () => {
  requireCliBuild();
  requirePodman();
  const env = sshHostsEnv();
  remoteUser = env.YONDER_SSH_USER as string;
  const user = lookUp(remoteUser);
  if (!user)
    throw new Error(
      `The ssh hosts' user ${remoteUser} is missing: bash scripts/sshd-hosts.sh start`,
    );
  remote = user;
  state = mkdtempSync(join('/tmp', 'yonder-containers-ssh-'));
  onCleanup(() => rmSync(state, { recursive: true, force: true }));
  const added = await yonder([
    'profile',
    'add',
    'box',
    '--backend',
    'ssh',
    '--host',
    'target',
    '--ssh-config',
    env.YONDER_SSH_CONFIG as string,
    '--container-runtime',
    'podman',
    '--container-image',
    TEST_IMAGE,
  ]);
  expect(added.code, added.stderr).toBe(0);
});

afterAll(cleanupUsers);

describe('podman on the ssh backend, from the profile’s container defaults', () => {
  it('runs the command inside with the binds, settings, env and secrets; the image id is recorded', async () => {
    const input = remoteDir(`in $(touch pwned) 'q' ☃`);
    writeFileSync(join(input, 'input'), 'remote-input\n', { mode: 0o644 });
    const out = remoteDir('out');
    const settings = join(state, 'settings.json');
    writeFileSync(settings, JSON.stringify({ n: 1 }));
    const secret = `ssh-secret $(id) "q" ${Date.now()}`;
    const submitted = await yonder(
      [
        'submit',
        '--profile',
        'box',
        '--bind',
        `${input}:/in`,
        '--bind',
        `${out}:/out:rw`,
        '--settings',
        settings,
        '--container-env',
        'INSIDE=only',
        '--secret',
        'TOKEN',
        '--',
        'sh',
        '-c',
        'cat /etc/yonder-image /in/input "$1"; echo "$INSIDE|$TOKEN"; echo done > /out/result; touch /in/x 2>/dev/null || echo read-only; id -un',
        'sh',
        '{settings}',
      ],
      { TOKEN: secret },
    );
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '120'])).code).toBe(0);
    expect((await yonder(['logs', id])).stdout).toBe(
      `${IMAGE_MARKER}\nremote-input\n{\n  "n": 1\n}\nonly|${secret}\nread-only\n${remoteUser}\n`,
    );
    expect(readFileSync(join(out, 'result'), 'utf8')).toBe('done\n');
    expect(existsSync(join(input, 'pwned'))).toBe(false);
    const status = JSON.parse((await yonder(['status', id, '--json'])).stdout);
    expect(status.result[0].containerImage.id).toBe(imageId(remoteUser));
    expect(status.result[0].spec.container.env).toEqual({ INSIDE: 'only' });
  });

  it('cancel stops the container on the host', async () => {
    const out = remoteDir('out-cancel');
    const submitted = await yonder([
      'submit',
      '--profile',
      'box',
      '--bind',
      `${out}:/out:rw`,
      '--',
      'sh',
      '-c',
      'echo ready > /out/ready; exec sleep 300',
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    await until(() => existsSync(join(out, 'ready')), 60_000, 'the job to start in its container');
    expect(runningContainers(remoteUser, id)).toHaveLength(1);
    expect((await yonder(['cancel', id])).stdout).toContain(`${id} cancelled`);
    expect(runningContainers(remoteUser, id)).toEqual([]);
  });

  it('refuses, on the target, a bind source it does not have; --no-container runs on the host', async () => {
    const refused = await yonder([
      'submit',
      '--profile',
      'box',
      '--bind',
      `${state}/only-here:/in`,
      '--',
      'true',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `container.binds.0: the source ${state}/only-here does not exist on the target`,
    );
    const plain = await yonder([
      'submit',
      '--profile',
      'box',
      '--no-container',
      '--',
      'sh',
      '-c',
      'test -e /etc/yonder-image || echo host',
    ]);
    expect(plain.code, plain.stderr).toBe(0);
    const id = plain.stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '60'])).code).toBe(0);
    expect((await yonder(['logs', id])).stdout).toBe('host\n');
  });
});
