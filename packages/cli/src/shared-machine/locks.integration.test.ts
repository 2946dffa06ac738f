/**
 * Issue 11, locks on a shared `$HOME`: two "hosts" share one state directory — the second in
 * its own UTS and PID namespaces (`unshare`), so its host name and pids mean nothing here. A
 * lock or lease held there is alive until its lease runs out unrenewed; only then is it
 * broken, and no update is lost.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { type InstalledCli, installCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let cli: InstalledCli;
let work: string;
let storeFs: any;
let conformance: any;
const children: ChildProcess[] = [];

const WORKER = `
import { existsSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
const [storeUrl, mode, state, key, ttl, holding, go] = process.argv.slice(2);
const { createFsStore } = await import(storeUrl);
const store = createFsStore({ location: state });
const pause = new Int32Array(new SharedArrayBuffer(4));
if (mode === 'job') {
  // Hold the job's lock, blocked (no event loop, so no renewal), until told to go on.
  await store.updateJob(key, (job) => {
    writeFileSync(holding, hostname() + ' ' + process.pid);
    while (!existsSync(go)) Atomics.wait(pause, 0, 0, 10);
    return { ...job, misses: job.misses + 1, name: 'from-b' };
  });
} else {
  // Hold a poll lease, renewing it, until killed.
  const lease = await store.tryLease(key, Number(ttl));
  writeFileSync(holding, (lease ? 'held ' : 'refused ') + hostname() + ' ' + process.pid);
  setInterval(() => {}, 1000);
}
`;

function requireRoot(): void {
  if (process.getuid?.() !== 0)
    throw new Error('The two-host lock tests make namespaces with unshare and need root.');
}

/** Run the worker on the other "host": its own PID namespace, and its own UTS one with `uts`. */
function onOtherHost(args: string[], uts: boolean): ChildProcess {
  const script = join(work, 'worker.mjs');
  const namespaces = [...(uts ? ['--uts'] : []), '--pid', '--fork', '--mount-proc'];
  const inner = `${uts ? 'hostname yonder-host-b && ' : ''}exec "$0" "$@"`;
  const child = spawn(
    'unshare',
    [...namespaces, 'sh', '-c', inner, process.execPath, script, ...args],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  child.on('close', (code) => {
    if (code !== 0 && code !== null) process.stderr.write(`worker on host b: ${stderr}`);
  });
  children.push(child);
  return child;
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-(child.pid as number), 'SIGKILL');
  } catch {}
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.on('close', (code) => resolve(code));
  });
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await sleep(10);
  }
}

beforeAll(async () => {
  requireRoot();
  cli = installCli();
  work = mkdtempSync(join(tmpdir(), 'yonder-two-hosts-'));
  writeFileSync(join(work, 'worker.mjs'), WORKER);
  const modules = join(cli.root, 'node_modules', '@yonder');
  storeFs = await import(pathToFileURL(join(modules, 'store-fs', 'dist', 'index.js')).href);
  conformance = await import(
    pathToFileURL(join(modules, 'core', 'dist', 'conformance', 'index.js')).href
  );
});

afterAll(() => {
  for (const child of children) killGroup(child);
  rmSync(work, { recursive: true, force: true });
  cli?.remove();
});

describe.each([
  ['another host (UTS and PID namespaces)', true],
  ['another PID namespace on this host', false],
])('a job lock held on %s', (_where, uts) => {
  it('is waited for, never broken while held, and no update is lost', async () => {
    const state = mkdtempSync(join(work, 'state-'));
    const store = storeFs.createFsStore({ location: state });
    const job = conformance.sampleJob({ state: 'running' });
    await store.createJob(job);
    const holding = join(state, 'holding');
    const go = join(state, 'go');
    const storeUrl = pathToFileURL(
      join(cli.root, 'node_modules/@yonder/store-fs/dist/index.js'),
    ).href;
    const other = onOtherHost([storeUrl, 'job', state, job.id, '0', holding, go], uts);
    await until(() => existsSync(holding), 20_000, 'host b to hold the lock');
    if (uts) expect(readFileSync(holding, 'utf8')).toMatch(/^yonder-host-b /);

    const ours = store.updateJob(job.id, (current: typeof job) => ({
      ...current,
      misses: current.misses + 1,
      error: { code: 'E_X', message: 'from-a' },
    }));
    // Held there (its pid meaningless here): our update must wait, not break the lock.
    const early = await Promise.race([ours.then(() => 'done'), sleep(1_500).then(() => 'waiting')]);
    expect(early).toBe('waiting');
    writeFileSync(go, '');
    const updated = await ours;
    expect(await exited(other)).toBe(0);
    const final = await store.getJob(job.id);
    expect(final.misses).toBe(2);
    expect(final.name).toBe('from-b');
    expect(final.error?.message).toBe('from-a');
    expect(updated.revision).toBe(final.revision);
  }, 60_000);
});

describe('a poll lease held on another host', () => {
  it('stays held while renewed, and is broken only once it has gone unrenewed for its ttl', async () => {
    const state = mkdtempSync(join(work, 'lease-'));
    const store = storeFs.createFsStore({ location: state });
    await store.listJobs();
    const holding = join(state, 'holding');
    const storeUrl = pathToFileURL(
      join(cli.root, 'node_modules/@yonder/store-fs/dist/index.js'),
    ).href;
    const ttl = 1_500;
    const other = onOtherHost([storeUrl, 'lease', state, 'poll-x', String(ttl), holding, ''], true);
    await until(() => existsSync(holding), 20_000, 'host b to take the lease');
    expect(readFileSync(holding, 'utf8')).toMatch(/^held yonder-host-b /);

    expect(await store.tryLease('poll-x', 10_000)).toBeUndefined();
    // Longer than its ttl, and it is still held: it is being renewed.
    const watched = performance.now();
    await store.waitForLease('poll-x', 2 * ttl);
    expect(performance.now() - watched).toBeGreaterThanOrEqual(2 * ttl - 50);
    expect(await store.tryLease('poll-x', 10_000)).toBeUndefined();

    killGroup(other);
    await exited(other);
    const started = performance.now();
    await store.waitForLease('poll-x', 20_000);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(ttl - 50);
    expect(waited).toBeLessThan(15_000);
    const lease = await store.tryLease('poll-x', 10_000);
    expect(lease).toBeDefined();
    await lease.release();
  }, 60_000);
});
