/** The listing index on real files: the same jobs as listJobs, a stale or torn index, concurrent listers and writers in other processes, a planted index. */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobRecord, StoreV1 } from '@yonder/core';
import { listedJob } from '@yonder/core/backend-kit';
import { sampleJob } from '@yonder/core/conformance';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFsStore } from './index.js';

let location: string;
let store: StoreV1;
const index = (): string => join(location, 'listing.index');

beforeEach(() => {
  location = mkdtempSync(join(tmpdir(), 'yonder-listing-'));
  store = createFsStore({ location });
});

afterEach(() => {
  rmSync(location, { recursive: true, force: true });
});

/** Finished jobs (and one running), in several shards. */
async function jobs(count: number): Promise<JobRecord[]> {
  const made: JobRecord[] = [];
  for (let n = 0; n < count; n += 1) {
    const job = sampleJob({
      id: `${(n % 4).toString(16).padStart(2, '0')}${n.toString(16).padStart(6, '0')}`,
      name: n === 1 ? 'tab\there "quoted" \\ ünï\n' : `job ${n}`,
      state: n === 0 ? 'running' : n % 3 === 0 ? 'failed' : 'succeeded',
      exitCode: n % 3 === 0 ? 3 : 0,
      signal: n === 5 ? 'SIGKILL' : null,
      createdAt: new Date(Date.UTC(2026, 0, 1) + (n % 7) * 1000).toISOString(),
      logTail: { start: 0, end: 2, data: 'aGkK', at: new Date().toISOString() },
    } as Partial<JobRecord>);
    await store.createJob(job);
    made.push(job);
  }
  return made;
}

/** Put every file and directory of the ledger a minute back: settled, as an old ledger is. */
function settle(): void {
  const past = new Date(Date.now() - 60_000);
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (lstatSync(path).isDirectory()) walk(path);
      utimesSync(path, past, past);
    }
    utimesSync(dir, past, past);
  };
  walk(join(location, 'jobs'));
}

/** The listing as `listJobs({})` would show it: ids in order, and each job's JSON. */
async function expected(): Promise<Array<[string, string]>> {
  const { jobs: all } = await store.listJobs({});
  return all.map((job) => [job.id, JSON.stringify(listedJob(job))]);
}

async function listed(): Promise<Array<[string, string]>> {
  const listing = await (store.listing as NonNullable<StoreV1['listing']>)();
  try {
    return listing.entries.map((entry) => [entry.id, Buffer.from(entry.json()).toString('utf8')]);
  } finally {
    listing.close();
  }
}

describe('the listing index', () => {
  it('lists what listJobs lists, builds the index once and then uses it as it is', async () => {
    await jobs(12);
    settle();
    expect(await listed()).toEqual(await expected());
    const built = readFileSync(index());
    expect(statSync(index()).mode & 0o777).toBe(0o600);
    // The running job is never indexed; every finished one is, without its log tail.
    expect(built.toString()).not.toContain('aGkK');
    expect(await listed()).toEqual(await expected());
    expect(readFileSync(index()).equals(built)).toBe(true);
  });

  it('a job changed or removed by another writer after indexing is shown as it is now', async () => {
    const made = await jobs(9);
    settle();
    await listed();
    const changed = made[2] as JobRecord;
    const gone = made[3] as JobRecord;
    await store.updateJob(changed.id, (job) => ({ ...job, name: 'renamed', state: 'cancelled' }));
    await store.removeJob?.(gone.id);
    const now = await listed();
    expect(now).toEqual(await expected());
    expect(now.map(([id]) => id)).not.toContain(gone.id);
    expect(JSON.parse(now.find(([id]) => id === changed.id)?.[1] as string)).toMatchObject({
      name: 'renamed',
      state: 'cancelled',
    });
    // Settled again, the shard is indexed anew and still right.
    settle();
    await listed();
    expect(await listed()).toEqual(await expected());
  });

  it('a record edited by hand (renamed into place) after indexing: the record wins', async () => {
    const made = await jobs(6);
    settle();
    await listed();
    const target = made[4] as JobRecord;
    const path = join(location, 'jobs', target.id.slice(0, 2), `${target.id}.json`);
    const record = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(`${path}.new`, JSON.stringify({ ...record, name: 'by hand' }), { mode: 0o600 });
    rmSync(path);
    writeFileSync(path, readFileSync(`${path}.new`), { mode: 0o600 });
    rmSync(`${path}.new`);
    expect(await listed()).toEqual(await expected());
  });

  it('a torn block, a flipped byte and garbage in the index never show: the records do', async () => {
    await jobs(10);
    settle();
    await listed();
    const bytes = readFileSync(index());
    // A byte flipped inside a job's JSON: its block fails its checksum.
    const at = bytes.indexOf('"job 7"');
    bytes[at + 2] = 'X'.charCodeAt(0);
    writeFileSync(index(), bytes);
    expect(await listed()).toEqual(await expected());
    // A block cut short by a crash, then garbage and a header that claims too much.
    const whole = readFileSync(index());
    appendFileSync(index(), whole.subarray(0, Math.floor(whole.length / 2)));
    appendFileSync(index(), '\nS1\t00\t1:2:3\t99999999\t00000000\nnot a job\n\0\xff');
    expect(await listed()).toEqual(await expected());
    // A forged block for a shard: its checksum matches, its key is not the shard's.
    const body = Buffer.from(
      '00aaaaaa\t1:2:3:4\t"2030-01-01T00:00:00.000Z"\tsucceeded\t0\t\t"x"\t"y"\t{}\n',
    );
    const { crc32 } = await import('node:zlib');
    const header = `\nS1\t00\t1:2:3\t${body.length}\t${crc32(body).toString(16).padStart(8, '0')}\n`;
    appendFileSync(index(), Buffer.concat([Buffer.from(header), body]));
    const now = await listed();
    expect(now.map(([id]) => id)).not.toContain('00aaaaaa');
    expect(now).toEqual(await expected());
  });

  it('an index mostly of dead blocks is written again with only the live ones', async () => {
    const made = await jobs(8);
    settle();
    await listed();
    const live = statSync(index()).size;
    // Dead weight: garbage and superseded blocks, more than twice the live ones and 8 MiB.
    appendFileSync(index(), Buffer.alloc(9 * 1024 * 1024, 'x'));
    await store.updateJob((made[3] as JobRecord).id, (job) => ({ ...job, name: 'changed' }));
    settle();
    expect(await listed()).toEqual(await expected());
    expect(statSync(index()).size).toBeLessThan(2 * live + 4096);
    expect(statSync(index()).mode & 0o777).toBe(0o600);
    expect(readdirSync(location).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    expect(await listed()).toEqual(await expected());
  });

  it('listers and writers in other processes at once: every listing is right afterwards', async () => {
    const made = await jobs(40);
    settle();
    const module = new URL('../dist/index.js', import.meta.url).pathname;
    const lister = `
      import { createFsStore } from ${JSON.stringify(module)};
      const store = createFsStore({ location: ${JSON.stringify(location)} });
      for (let i = 0; i < 10; i += 1) (await store.listing()).close();`;
    const writer = `
      import { createFsStore } from ${JSON.stringify(module)};
      const store = createFsStore({ location: ${JSON.stringify(location)} });
      for (const id of ${JSON.stringify(made.slice(1, 21).map((job) => job.id))})
        await store.updateJob(id, (job) => ({ ...job, name: job.name + ' again' }));`;
    const results = await Promise.all([lister, lister, lister, writer].map(run));
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    expect(await listed()).toEqual(await expected());
    settle();
    const runs = await Promise.all([lister, lister, lister].map(run));
    for (const result of runs) expect(result.code, result.stderr).toBe(0);
    expect(await listed()).toEqual(await expected());
  });

  it('a corrupt record is reported by every listing, never indexed away', async () => {
    const made = await jobs(5);
    const bad = made[2] as JobRecord;
    const path = join(location, 'jobs', bad.id.slice(0, 2), `${bad.id}.json`);
    writeFileSync(path, '{"id": "broken"', { mode: 0o600 });
    settle();
    for (let n = 0; n < 2; n += 1) {
      const listing = await (store.listing as NonNullable<StoreV1['listing']>)();
      expect(listing.problems.map((problem) => problem.location)).toEqual([path]);
      expect(listing.entries.map((entry) => entry.id)).not.toContain(bad.id);
      listing.close();
    }
  });

  it('an index planted by another user, or a link in its place, is refused and left alone', async () => {
    if (process.getuid?.() !== 0)
      throw new Error('This test needs root (to plant a file of another user).');
    await jobs(4);
    settle();
    writeFileSync(index(), 'planted', { mode: 0o600 });
    chownSync(index(), 65534, 65534);
    await expect(listed()).rejects.toMatchObject({ code: 'E_UNTRUSTED_PATH' });
    expect(readFileSync(index(), 'utf8')).toBe('planted');
    rmSync(index());
    writeFileSync(index(), 'open to all', { mode: 0o600 });
    chmodSync(index(), 0o622);
    await expect(listed()).rejects.toMatchObject({ code: 'E_UNTRUSTED_PATH' });
    rmSync(index());
    const target = join(location, 'precious');
    writeFileSync(target, 'mine\n');
    symlinkSync(target, index());
    await expect(listed()).rejects.toMatchObject({ code: 'E_UNTRUSTED_PATH' });
    expect(readFileSync(target, 'utf8')).toBe('mine\n');
    rmSync(index());
    expect(await listed()).toEqual(await expected());
  });
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
