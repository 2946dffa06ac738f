import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backendConformance } from '@yonder/core/conformance';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCommandBackend } from './command-backend.js';
import { commandManager, TOYQ, toyqProfile } from './test-support/toyq.js';

const ROOT = new URL('../../..', import.meta.url).pathname;
const queueDir = mkdtempSync(join(tmpdir(), 'yonder-toyq-'));
process.env.TOYQ_DIR = queueDir;

const toyq = toyqProfile;
const manager = commandManager;

backendConformance(it, () => createCommandBackend(), {
  profile: toyq('toyq'),
  jobTimeoutMs: 30_000,
});

describe('command backend with real programs', () => {
  it('keeps template values with spaces, quotes, ; and $() as single literal arguments', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'yonder-cmd-bin-'));
    const record = join(bin, 'args');
    const submit = join(bin, 'record-submit');
    writeFileSync(
      submit,
      `#!/bin/sh\nfor a in "$@"; do printf '[%s]\\n' "$a"; done > ${JSON.stringify(record)}\nexec ${TOYQ}/toyq-submit "$3"\n`,
    );
    chmodSync(submit, 0o755);
    const m = manager();
    await m.saveProfile(toyq('rec', { submit: `${submit} --name={name} {name} {script}` }));
    const name = `a b; touch ${bin}/canary $(touch ${bin}/canary2) 'q' "d"`;
    const job = await m.submit({ argv: ['true'], name }, { profile: 'rec' });
    const lines = readFileSync(record, 'utf8').split('\n');
    expect(lines[0]).toBe(`[--name=${name}]`);
    expect(lines[1]).toBe(`[${name}]`);
    expect(existsSync(join(bin, 'canary')) || existsSync(join(bin, 'canary2'))).toBe(false);
    await m.wait([job.id], { timeoutMs: 20_000 });
  }, 40_000);

  it('knows exit codes the queue never reports, and settles jobs the queue forgot', async () => {
    const m = manager();
    await m.saveProfile(toyq('q'));
    const job = await m.submit({ argv: ['sh', '-c', 'echo out; exit 7'] }, { profile: 'q' });
    const { jobs } = await m.wait([job.id], { timeoutMs: 20_000 });
    expect(jobs[0]).toMatchObject({
      state: 'failed',
      exitCode: 7,
      failureKind: 'application',
      history: expect.arrayContaining([expect.objectContaining({ source: 'exit-code-file' })]),
    });
    expect((await m.logs(job.id)).chunk.data.toString()).toBe('out\n');
  }, 40_000);

  it('calls a per-job status command once per job, and reads JSON lines', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'yonder-cmd-json-'));
    const calls = join(bin, 'calls');
    const status = join(bin, 'status-json');
    writeFileSync(
      status,
      `#!/bin/sh\necho "$1" >> ${JSON.stringify(calls)}\nif ${TOYQ}/toyq-status "$1" | grep -q RUNNING; then printf '{"id": "%s", "state": "RUNNING"}\\n' "$1"; fi\n`,
    );
    chmodSync(status, 0o755);
    const m = manager();
    await m.saveProfile(toyq('per-job', { status: `${status} {external_id}` }));
    const jobs = await Promise.all(
      [1, 2].map(() => m.submit({ argv: ['sleep', '1'] }, { profile: 'per-job' })),
    );
    await m.refresh({ force: true });
    expect(readFileSync(calls, 'utf8').trim().split('\n').sort()).toEqual(
      jobs.map((job) => job.externalId).sort(),
    );
    const after = await Promise.all(jobs.map((job) => m.store.getJob(job.id)));
    expect(after.map((job) => job?.state)).toEqual(['running', 'running']);
    const { jobs: done } = await m.wait(
      jobs.map((job) => job.id),
      { timeoutMs: 20_000 },
    );
    expect(done.map((job) => job.state)).toEqual(['succeeded', 'succeeded']);
  }, 40_000);

  it('an unknown native state is unknown, never final; the states option maps it', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'yonder-cmd-odd-'));
    const status = join(bin, 'status-odd');
    writeFileSync(status, '#!/bin/sh\nfor id in "$@"; do echo "$id WIBBLING"; done\n');
    chmodSync(status, 0o755);
    const m = manager();
    await m.saveProfile(toyq('odd', { status: `${status} {external_ids}` }));
    const job = await m.submit({ argv: ['sleep', '30'] }, { profile: 'odd' });
    await m.refresh({ force: true });
    expect(await m.store.getJob(job.id)).toMatchObject({
      state: 'unknown',
      nativeState: 'WIBBLING',
    });
    await m.saveProfile(
      toyq('odd2', { status: `${status} {external_ids}`, states: { WIBBLING: 'running' } }),
    );
    const mapped = await m.submit({ argv: ['sleep', '30'] }, { profile: 'odd2' });
    await m.refresh({ force: true });
    expect(await m.store.getJob(mapped.id)).toMatchObject({
      state: 'running',
      nativeState: 'WIBBLING',
    });
    await m.cancel([job.id, mapped.id]);
  }, 40_000);

  it('a failing status command changes nothing; a failing submit leaves no directory', async () => {
    const m = manager();
    const profile = toyq('q');
    await m.saveProfile(profile);
    const job = await m.submit({ argv: ['sleep', '2'] }, { profile: 'q' });
    await m.saveProfile({
      ...profile,
      name: 'broken',
      options: { ...profile.options, status: '/bin/false {external_ids}' },
    });
    await m.store.updateJob(job.id, (current) => ({
      ...current,
      profileSnapshot: {
        ...current.profileSnapshot,
        options: { ...current.profileSnapshot.options, status: '/bin/false {external_ids}' },
      },
    }));
    await m.refresh({ force: true });
    expect(await m.store.getJob(job.id)).toMatchObject({
      state: 'pending',
      error: { code: 'E_SCHEDULER_UNAVAILABLE' },
    });
    await m.saveProfile(toyq('nosubmit', { submit: '/bin/false {script}' }));
    await expect(m.submit({ argv: ['true'] }, { profile: 'nosubmit' })).rejects.toMatchObject({
      code: 'E_SUBMIT_FAILED',
    });
  }, 40_000);
});

describe('README examples', () => {
  let yonderBin: string;
  beforeAll(() => {
    yonderBin = join(ROOT, 'packages/cli/dist/bin.js');
    const ping = spawnSync('scontrol', ['ping'], { encoding: 'utf8' });
    if (ping.status !== 0)
      throw new Error('The Slurm test cluster is not running: bash scripts/slurm-cluster.sh start');
  });

  const blocks = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    .split('```sh\n')
    .slice(1)
    .map((chunk) => chunk.slice(0, chunk.indexOf('```')))
    // The install line is a block too; the examples are the blocks that use yonder.
    .filter((block) => !block.startsWith('npm install'));

  it('has the two example profiles', () => {
    expect(blocks).toHaveLength(2);
  });

  it.each([
    ['a queue yonder has no backend for', 0, 'hello from toyq\n', 3],
    ['Slurm through templates', 1, 'on slurm\n', 5],
  ])(
    '%s works as written',
    (_title, index, output, code) => {
      const state = mkdtempSync(join(tmpdir(), 'yonder-readme-'));
      const script = `set -euo pipefail\nyonder() { node ${JSON.stringify(yonderBin)} "$@"; }\n${blocks[index]}`;
      const result = execFileSync('bash', ['-c', script], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, YONDER_STATE_DIR: state, NO_COLOR: '1', TOYQ_DIR: queueDir },
        timeout: 120_000,
      });
      expect(result).toContain(`failed exit ${code}`);
      expect(result).toContain(`wait exited with ${code}`);
      expect(result.endsWith(output)).toBe(true);
    },
    150_000,
  );
});
