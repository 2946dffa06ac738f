/**
 * Two profiles that name the same host alias through different ssh configs (one alias, two
 * machines or two accounts: a lab's `hpc` and a personal `hpc`, say): each profile's jobs are
 * polled, cancelled and removed through its own route, never through the other's, where their
 * job directories do not exist and a running job would be taken for lost.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hostsEnv, sshManager, sshProfile } from './test-support/hosts.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-same-alias-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A config where `box` is the block of `alias` in `file` (its lines, under another name). */
function boxFor(file: string, alias: string, name: string): string {
  const lines = readFileSync(file, 'utf8').split('\n');
  const start = lines.indexOf(`Host ${alias}`);
  expect(start, `Host ${alias} in ${file}`).toBeGreaterThanOrEqual(0);
  const block = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith(' ')) break;
    block.push(line);
  }
  const config = join(scratch, name);
  writeFileSync(config, ['Host box', ...block, ''].join('\n'));
  return config;
}

describe('one host alias in two ssh configs', () => {
  it('each profile’s jobs are polled and cancelled through its own config, and all end as they did', async () => {
    const env = hostsEnv();
    const client = env.YONDER_SSH_CLIENT_DIR as string;
    const test = boxFor(env.YONDER_SSH_CONFIG as string, 'target', 'config-test');
    const bash = boxFor(join(client, 'config-login'), 'bash-user', 'config-bash');
    const { manager } = sshManager();
    try {
      await manager.saveProfile({ ...sshProfile('box'), name: 'a', ssh: { config: test } });
      await manager.saveProfile({ ...sshProfile('box'), name: 'b', ssh: { config: bash } });
      // The long job first: it leads the ledger's order of the active jobs while the others run.
      const long = await manager.submit({ argv: ['sleep', '300'] }, { profile: 'b' });
      const a = await manager.submit({ argv: ['sh', '-c', 'sleep 2; id -un'] }, { profile: 'a' });
      const b = await manager.submit({ argv: ['sh', '-c', 'sleep 2; id -un'] }, { profile: 'b' });
      const { jobs } = await manager.wait([a.id, b.id], { timeoutMs: 60_000 });
      const byId = new Map(jobs.map((job) => [job.id, job]));
      expect(byId.get(a.id)).toMatchObject({ state: 'succeeded', exitCode: 0 });
      expect(byId.get(b.id)).toMatchObject({ state: 'succeeded', exitCode: 0 });
      // A cancel of jobs of both profiles at once: each through its own route.
      const other = await manager.submit({ argv: ['sleep', '300'] }, { profile: 'a' });
      await manager.cancel([long.id, other.id]);
      const { jobs: cancelled } = await manager.wait([long.id, other.id], { timeoutMs: 60_000 });
      expect(cancelled.map((job) => job.state)).toEqual(['cancelled', 'cancelled']);
      // Each ran as its own profile's account.
      const output = async (id: string) =>
        (await manager.logs(id, { all: true })).chunk.data.toString().trim();
      expect(await output(a.id)).toBe(env.YONDER_SSH_USER);
      expect(await output(b.id)).toBe('yonder-bash');
    } finally {
      await manager.close();
    }
  }, 120_000);
});
