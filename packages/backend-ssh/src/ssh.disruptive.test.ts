import { beforeAll, expect, it } from 'vitest';
import { createSshTransport } from './ssh-transport.js';
import { hosts, hostsEnv, sshManager, sshProfile } from './test-support/hosts.js';

// Kills every SSH connection to the test hosts: run alone (vitest project `disruptive`).
beforeAll(() => {
  hostsEnv();
});

it('a connection killed mid-operation is a transport error; the next call reconnects', async () => {
  const ssh = createSshTransport({
    profile: sshProfile('target'),
    env: { ...process.env, SSH_AUTH_SOCK: '' },
  });
  try {
    expect((await ssh.run(['true'])).exitCode).toBe(0);
    const running = ssh.run(['sleep', '5']);
    await new Promise((resolve) => setTimeout(resolve, 500));
    hosts('kill-connections');
    await expect(running).rejects.toMatchObject({
      code: 'E_TRANSPORT',
      message: expect.stringMatching(/lost|closed|connection/i),
    });
    expect((await ssh.run(['echo', 'back'])).stdout).toBe('back\n');
  } finally {
    await ssh.close();
  }
}, 60_000);

it('after the connection is killed, the next refresh reconnects by itself and nothing is lost', async () => {
  const { manager } = sshManager();
  await manager.saveProfile({ ...sshProfile('target'), name: 'box' });
  const job = await manager.submit({ argv: ['sleep', '4'] }, { profile: 'box' });
  await manager.refresh({ force: true });
  hosts('kill-connections');
  await manager.refresh({ force: true });
  const after = await manager.store.getJob(job.id);
  expect(after).toMatchObject({ state: 'running', error: null });
  const { jobs } = await manager.wait([job.id], { timeoutMs: 30_000 });
  expect(jobs[0]).toMatchObject({ state: 'succeeded', error: null });
  await manager.close();
}, 60_000);

it('a host whose sshd is stopped gives a clear error and changes nothing; it converges once sshd is back', async () => {
  const { manager } = sshManager();
  await manager.saveProfile({ ...sshProfile('target'), name: 'box' });
  const job = await manager.submit({ argv: ['sleep', '3'] }, { profile: 'box' });
  hosts('kill-connections');
  hosts('stop-host', 'target');
  try {
    await manager.refresh({ force: true });
    const during = await manager.store.getJob(job.id);
    expect(during?.state).toBe('running');
    expect(during?.error).toMatchObject({
      code: 'E_TRANSPORT',
      message: expect.stringContaining('127.0.0.1:2201'),
    });
  } finally {
    hosts('start-host', 'target');
  }
  const { jobs } = await manager.wait([job.id], { timeoutMs: 60_000 });
  expect(jobs[0]).toMatchObject({ state: 'succeeded' });
  await manager.close();
}, 120_000);
