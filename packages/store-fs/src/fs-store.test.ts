/** The file ledger on real files: corrupt records, concurrent writers, dead holders, read-only and recent listings. */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readBootId } from '@yonder/core/backend-kit';
import { sampleJob } from '@yonder/core/conformance';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pidNamespace } from './file-lock.js';
import { createFsStore, resolveStateDirectory } from './index.js';
import { readEntry } from './lock-entry.js';

/** Wait until `check` holds, polling; fail after `timeoutMs` naming `what`. */
async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await sleep(5);
  }
}

let location: string;

beforeEach(() => {
  location = mkdtempSync(join(tmpdir(), 'yonder-fs-'));
});

afterEach(() => {
  chmodSync(location, 0o700);
  rmSync(location, { recursive: true, force: true });
});

function run(script: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('resolveStateDirectory', () => {
  it('prefers YONDER_STATE_DIR, then XDG_STATE_HOME/yonder, then ~/.local/state/yonder', () => {
    expect(resolveStateDirectory({ YONDER_STATE_DIR: '/x/y', XDG_STATE_HOME: '/s' })).toBe('/x/y');
    expect(resolveStateDirectory({ XDG_STATE_HOME: '/s' })).toBe('/s/yonder');
    expect(resolveStateDirectory({})).toMatch(/\.local\/state\/yonder$/);
  });
});

describe('FsStore', () => {
  it('reports a corrupt record with its path and keeps the rest usable', async () => {
    const store = createFsStore({ location });
    const good = sampleJob({ state: 'running' });
    const bad = sampleJob({ state: 'running' });
    await store.createJob(good);
    await store.createJob(bad);
    const path = join(location, 'jobs', bad.id.slice(0, 2), `${bad.id}.json`);
    writeFileSync(path, '{"id": "trunc');
    const { jobs, problems } = await store.listJobs({ activeOnly: true });
    expect(jobs.map((job) => job.id)).toEqual([good.id]);
    expect(problems).toEqual([{ location: path, message: expect.stringContaining(path) }]);
    await expect(store.getJob(bad.id)).rejects.toMatchObject({ code: 'E_CORRUPT_RECORD', path });
  });

  it('lists active jobs without reading finished ones', async () => {
    const store = createFsStore({ location });
    const active = sampleJob({ state: 'running' });
    const done = sampleJob({ state: 'running' });
    await store.createJob(active);
    await store.createJob(done);
    await store.updateJob(done.id, (job) => ({ ...job, state: 'succeeded' }));
    // Make the finished record unreadable garbage: an active listing must not touch it.
    writeFileSync(join(location, 'jobs', done.id.slice(0, 2), `${done.id}.json`), 'garbage');
    const { jobs, problems } = await store.listJobs({ activeOnly: true });
    expect(jobs.map((job) => job.id)).toEqual([active.id]);
    expect(problems).toEqual([]);
    expect(readdirSync(join(location, 'active'))).toEqual([active.id]);
  });

  it('keeps every update when several processes write the same job at once', async () => {
    const store = createFsStore({ location });
    const job = sampleJob({ data: { count: 0 } });
    await store.createJob(job);
    const module = new URL('../dist/index.js', import.meta.url).pathname;
    const script = `
      import { createFsStore } from ${JSON.stringify(module)};
      const store = createFsStore({ location: ${JSON.stringify(location)} });
      for (let i = 0; i < 25; i += 1) {
        await store.updateJob(${JSON.stringify(job.id)}, (job) => ({ ...job, data: { count: job.data.count + 1 } }));
      }`;
    const results = await Promise.all([1, 2, 3, 4].map(() => run(script)));
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    expect((await store.getJob(job.id))?.data.count).toBe(100);
  });

  it('breaks a lock left by a process of this machine that died, at once', async () => {
    const store = createFsStore({ location });
    const job = sampleJob();
    await store.createJob(job);
    const dead = spawn('true');
    await new Promise((resolve) => dead.on('close', resolve));
    writeFileSync(
      join(location, 'locks', `${job.id}.lock`),
      JSON.stringify({
        pid: dead.pid,
        startTime: '1',
        bootId: readBootId(),
        host: hostname(),
        pidNamespace: pidNamespace(),
        nonce: 'n',
        ttlMs: 60_000,
        expiresAt: Date.now() + 60_000,
        renewals: 0,
      }),
      { mode: 0o600 },
    );
    const started = performance.now();
    const updated = await store.updateJob(job.id, (current) => ({ ...current, state: 'running' }));
    expect(updated.state).toBe('running');
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('a lease held by a live process is not taken, and is again once released', async () => {
    const store = createFsStore({ location });
    const lease = await store.tryLease('k', 50);
    expect(lease).toBeDefined();
    expect(await store.tryLease('k', 50)).toBeUndefined();
    // Renewed while held: its 50 ms are long past, and it is still not taken.
    const lockFile = join(location, 'leases', 'k.lock');
    const before = readEntry(lockFile);
    await until(() => readEntry(lockFile) !== before, 5_000, 'a renewal');
    expect(await store.tryLease('k', 1000)).toBeUndefined();
    await lease?.release({ completed: true });
    const taken = await store.tryLease('k', 1000);
    expect(taken?.lastCompletedAt).toEqual(expect.any(String));
    await taken?.release();
  });

  it('gives a clear error, naming the fix, when the state directory is read-only', async () => {
    if (process.getuid?.() === 0) {
      // root ignores permission bits; a read-only bind would need mount rights. Use a file in the way instead.
      writeFileSync(join(location, 'ro'), 'x');
      const store = createFsStore({ location: join(location, 'ro', 'state') });
      await expect(store.createJob(sampleJob())).rejects.toMatchObject({
        code: 'E_STORE',
        message: expect.stringContaining('ro/state'),
      });
      return;
    }
    chmodSync(location, 0o500);
    const store = createFsStore({ location: join(location, 'state') });
    await expect(store.createJob(sampleJob())).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/not writable|YONDER_STATE_DIR/),
    });
  });

  it('finds recent jobs from the end of the index, newest first, skipping a torn line', async () => {
    const store = createFsStore({ location });
    const jobs = [];
    for (let i = 0; i < 30; i += 1) {
      const job = sampleJob();
      jobs.push(job);
      await store.createJob(job);
    }
    writeFileSync(join(location, 'index.log'), 'torn-line-without-newline', { flag: 'a' });
    const { jobs: recent } = await store.listJobs({ limit: 5 });
    expect(recent.map((job) => job.id)).toEqual(
      jobs
        .slice(-5)
        .reverse()
        .map((job) => job.id),
    );
  });
});
