/**
 * The reliability suite's own helpers (issue 7): reading the ledger straight from disk,
 * bystander processes, worker scripts, mounts, the argv scanner, and the one-line summaries
 * the suite prints. Not a test file: the `*.test.ts` files beside it import it; what other
 * tests share too (the CLI runner, hostile input, `until`, /proc, services) is in
 * `@yonder/test-helpers`.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { getErrorMessage } from '@yonder/core';
import type { Raw } from '@yonder/test-helpers';

const require = createRequire(import.meta.url);

/** file: URLs of the built packages, for worker scripts run by plain node. */
export const DIST = {
  cli: pathToFileURL(require.resolve('@yonder/cli')).href,
  core: pathToFileURL(require.resolve('@yonder/core')).href,
  storeFs: pathToFileURL(require.resolve('@yonder/store-fs')).href,
  ssh: pathToFileURL(require.resolve('@yonder/backend-ssh')).href,
};

const cleanups: Array<() => void> = [];

/** A fresh temporary directory, removed by `cleanupAll`. */
export function scratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `yonder-rel-${prefix}-`));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Run every registered cleanup (last first); never throws. */
export function cleanupAll(): void {
  while (cleanups.length > 0) {
    try {
      cleanups.pop()?.();
    } catch {
      /* best effort */
    }
  }
}

/** Fail (never skip) when not root: mounts and the test services need it. */
export function requireRoot(what: string): void {
  if (process.getuid?.() !== 0)
    throw new Error(`${what} needs root (mount, service control). Run the suite as root.`);
}

// ------------------------------------------------------------------ summaries

/**
 * Print one summary line to stderr (`[reliability] …`) and, when YONDER_RELIABILITY_SUMMARY
 * names a file, append it there too (RELIABILITY.md quotes these lines).
 */
export function summary(line: string): void {
  const text = `[reliability] ${line}\n`;
  process.stderr.write(text);
  const file = process.env.YONDER_RELIABILITY_SUMMARY;
  if (file) appendFileSync(file, text);
}

// ------------------------------------------------------------------ the ledger on disk

export interface DiskRecord {
  path: string;
  text: string;
  job: Raw | null;
  error: string | null;
}

/** Every job record file under `<state>/jobs/*\/*.json`, parsed (or the parse error). */
export function readRecords(state: string): DiskRecord[] {
  const out: DiskRecord[] = [];
  const jobs = join(state, 'jobs');
  if (!existsSync(jobs)) return out;
  for (const shard of readdirSync(jobs)) {
    if (shard.startsWith('.')) continue;
    const dir = join(jobs, shard);
    for (const name of readdirSync(dir)) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const path = join(dir, name);
      let text = '';
      try {
        text = readFileSync(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      try {
        const job = JSON.parse(text);
        const ok =
          typeof job?.id === 'string' &&
          `${job.id}.json` === name &&
          typeof job.state === 'string' &&
          Array.isArray(job.history);
        out.push({ path, text, job: ok ? job : null, error: ok ? null : 'not a job record' });
      } catch (error) {
        out.push({ path, text, job: null, error: getErrorMessage(error) });
      }
    }
  }
  return out;
}

/** Path → file bytes of every job record, to compare before and after a fault. */
export function snapshot(state: string): Map<string, string> {
  return new Map(readRecords(state).map((record) => [record.path, record.text]));
}

export function jobPath(state: string, id: string): string {
  return join(state, 'jobs', id.slice(0, 2), `${id}.json`);
}

export function readJob(state: string, id: string): Raw {
  return JSON.parse(readFileSync(jobPath(state, id), 'utf8'));
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** Leftover files in `<state>/locks` and `<state>/leases` (`*.lock`). */
export function lockFiles(state: string): string[] {
  const out: string[] = [];
  for (const dir of ['locks', 'leases']) {
    const full = join(state, dir);
    if (!existsSync(full)) continue;
    for (const name of readdirSync(full)) if (name.endsWith('.lock')) out.push(join(full, name));
  }
  return out;
}

// ------------------------------------------------------------------ processes

/** Start a detached, unrelated process (its own process group): the "bystander". */
export function bystander(seconds = 120): ChildProcess {
  const child = spawn('sleep', [String(seconds)], { detached: true, stdio: 'ignore' });
  child.unref();
  cleanups.push(() => {
    try {
      process.kill(child.pid as number, 'SIGKILL');
    } catch {}
  });
  return child;
}

/** Write a worker script (ES module) into `dir` and return its path. */
export function workerScript(dir: string, name: string, source: string): string {
  const path = join(dir, name);
  writeFileSync(path, source);
  return path;
}

// ------------------------------------------------------------------ mounts

/** Mount a tmpfs of `size` (e.g. `256k`) on a fresh directory; unmounted by `cleanupAll`. */
export function mountTmpfs(prefix: string, size: string): string {
  requireRoot('Mounting a tmpfs');
  const dir = mkdtempSync(join(tmpdir(), `yonder-rel-${prefix}-`));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
  cleanups.push(() => {
    spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

export function remount(dir: string, mode: 'ro' | 'rw'): void {
  execFileSync('mount', ['-o', `remount,${mode}`, dir]);
}

/** Fill a file system by writing zeros to `<dir>/fill` until ENOSPC; returns bytes written. */
export function fillDisk(dir: string): number {
  const path = join(dir, 'fill');
  const chunk = Buffer.alloc(4096);
  let written = 0;
  for (;;) {
    try {
      appendFileSync(path, chunk);
      written += chunk.length;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
      throw error;
    }
  }
  // The last partial page may still fit: top it up byte-wise.
  for (;;) {
    try {
      appendFileSync(path, Buffer.alloc(1));
      written += 1;
    } catch {
      break;
    }
  }
  return written;
}

// ------------------------------------------------------------------ services

/**
 * Wait while the benchmark lock exists (another process is measuring the shared services).
 * A lock whose process is gone is ignored, and the wait is bounded (15 minutes).
 */
export async function waitForBenchLock(log = true): Promise<void> {
  const file = '/tmp/yonder-bench.lock';
  const deadline = Date.now() + 15 * 60_000;
  let said = false;
  while (existsSync(file) && Date.now() < deadline) {
    const pid = Number(readFileSync(file, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return;
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    if (log && !said) {
      summary('waiting: /tmp/yonder-bench.lock exists (a benchmark is using the services)');
      said = true;
    }
    await sleep(10_000);
  }
}

/**
 * A directory anyone may write (for jobs run as the ssh test user), sticky as /tmp is, so that
 * a work directory below it may still be trusted; removed by cleanupAll.
 */
export function sharedDir(prefix: string): string {
  const dir = scratch(prefix);
  execFileSync('chmod', ['01777', dir]);
  return dir;
}

export function ensureDir(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}

export function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

// ------------------------------------------------------------------ argv scanning

/**
 * Scan every process's command line, as fast as it can, for a needle given in its environment
 * (never in its own argv); stop when the stop file appears and print what it found.
 */
export function startScanner(
  dir: string,
  needles: string[],
): {
  stop: () => Promise<{ scans: number; processes: number; hits: Array<[string, string]> }>;
} {
  const script = workerScript(
    dir,
    'scanner.mjs',
    `import { existsSync, readdirSync, readFileSync } from 'node:fs';
const needles = JSON.parse(process.env.SCAN_NEEDLES).map((n) => Buffer.from(n));
const stop = process.env.SCAN_STOP;
const self = String(process.pid);
const hits = new Map();
const seen = new Set();
let scans = 0;
while (!existsSync(stop)) {
  for (const pid of readdirSync('/proc')) {
    if (pid === self || !/^\\d+$/.test(pid)) continue;
    let cmd;
    try { cmd = readFileSync('/proc/' + pid + '/cmdline'); } catch { continue; }
    seen.add(pid + ':' + cmd.length);
    if (needles.some((n) => cmd.includes(n))) hits.set(pid, cmd.toString().replaceAll('\\0', ' ').slice(0, 300));
  }
  scans += 1;
}
process.stdout.write(JSON.stringify({ scans, processes: seen.size, hits: [...hits] }));
`,
  );
  const stopFile = join(dir, `stop-${Math.random().toString(16).slice(2)}`);
  const child: ChildProcess = spawn(process.execPath, [script], {
    env: { ...process.env, SCAN_NEEDLES: JSON.stringify(needles), SCAN_STOP: stopFile },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout?.on('data', (chunk) => {
    out += chunk;
  });
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return {
    async stop() {
      writeFileSync(stopFile, '');
      await closed;
      return JSON.parse(out);
    },
  };
}

/** Every file under `dir` (recursively) whose bytes contain `needle`. */
export function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir, { recursive: true })) {
    const path = join(dir, String(name));
    try {
      if (statSync(path).isFile() && readFileSync(path).includes(needle)) found.push(path);
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

/** Rewrite a job record on disk atomically (temporary file, then rename). */
export function rewriteRecord(state: string, id: string, change: (job: Raw) => void): void {
  const path = jobPath(state, id);
  const job = JSON.parse(readFileSync(path, 'utf8'));
  change(job);
  const temporary = `${path}.${process.pid}.edit`;
  writeFileSync(temporary, `${JSON.stringify(job)}\n`);
  renameSync(temporary, path);
}
