/** The file ledger's listing of its whole history: finished jobs from the listing index while their shard is unchanged, every other job from its record, the index brought up to date as it goes. */
import { closeSync, fstatSync, lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { JobRecord, JobState, StoreProblemV1 } from '@yonder/core';
import {
  isTerminal,
  type ListingEntryV1,
  type ListingOptionsV1,
  type ListingV1,
  listedJob,
  readPrivateFile,
} from '@yonder/core/backend-kit';
import { compactIndex } from './compact-index.js';
import type { LedgerDirectories } from './ledger-directories.js';
import { openLedgerFile } from './ledger-index.js';
import {
  appendBlocks,
  buildBlock,
  directoryKey,
  fileIdentity,
  type IndexBlock,
  type IndexedJob,
  jobLine,
  LISTING_INDEX,
  lineIdentity,
  type ReadBlock,
  readBlock,
  readLine,
  scanBlocks,
} from './listing-index.js';
import { JOB_ID, MAX_RECORD_BYTES, parseJobText, problemLocation, storeError } from './records.js';

/**
 * A directory or record changed this recently (by the file system's clock) is not indexed:
 * a change within the same tick of a coarse clock leaves its times as they were, so only a
 * state that has stood this long is known by its times.
 */
const SETTLED_MS = 2000;

/** A job's entry from its record, just read: its JSON made from it. */
class RecordEntry implements ListingEntryV1 {
  readonly id: string;
  readonly name: string;
  readonly profile: string;
  readonly state: JobState;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly createdAt: string;

  constructor(
    job: JobRecord,
    private readonly bytes: Buffer,
  ) {
    ({
      id: this.id,
      name: this.name,
      profile: this.profile,
      state: this.state,
      exitCode: this.exitCode,
      signal: this.signal,
      createdAt: this.createdAt,
    } = job);
  }

  json(): Buffer {
    return this.bytes;
  }
}

/** Newest first, ties by id, as `listJobs` orders. */
function newest(
  a: { createdAt: string; id: string },
  b: { createdAt: string; id: string },
): number {
  return a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1;
}

/** Where the listing reads: the state directory and its checked directories. */
export interface ListingSource {
  readonly location: string;
  readonly ledger: LedgerDirectories;
}

/**
 * Every job of the ledger, newest first. A shard's latest block in the index is used when the
 * shard's directory still has the key it had then (no record created, replaced or removed
 * since); otherwise the shard is read again: a record whose file is the one a block describes
 * is taken from the block, any other is read (checked as every read is) — and a new block for
 * the shard is appended when the shard stood still while it was read and has been settled
 * for `SETTLED_MS`. Unfinished and unreadable jobs are never indexed: their records are read
 * by every listing, and unreadable ones reported.
 * @throws UntrustedPathError when the index is a link or not a file of the user's own.
 */
export function readListing(source: ListingSource, options: ListingOptionsV1 = {}): ListingV1 {
  const path = join(source.location, LISTING_INDEX);
  const fd = openLedgerFile(path);
  const size = fd === undefined ? 0 : fstatSync(fd).size;
  const blocks = fd === undefined ? new Map<string, IndexBlock[]>() : scanBlocks(fd, size);
  const entries: ListingEntryV1[] = [];
  const problems: StoreProblemV1[] = [];
  const kept: IndexBlock[] = [];
  const fresh: Buffer[] = [];
  const now = Date.now();

  /** A record read (and checked); undefined when it is gone; a problem when unreadable. */
  const read = (file: string, id: string): JobRecord | undefined | null => {
    try {
      const text = readPrivateFile(file, MAX_RECORD_BYTES);
      return text === undefined ? undefined : parseJobText(file, text, id);
    } catch (error) {
      const failure = storeError('read', file, error);
      problems.push({ location: problemLocation(failure, file), message: failure.message });
      return null;
    }
  };
  const readEntry = (file: string, id: string): JobRecord | undefined | null => {
    const job = read(file, id);
    if (job) entries.push(new RecordEntry(job, Buffer.from(JSON.stringify(listedJob(job)))));
    return job;
  };

  for (const { shard, dir } of source.ledger.shards(problems)) {
    const before = lstatSync(dir, { throwIfNoEntry: false });
    if (!before) continue;
    const key = directoryKey(before);
    let latest: { block: IndexBlock; read: ReadBlock } | undefined;
    const candidates = fd === undefined ? [] : (blocks.get(shard) ?? []);
    for (let n = candidates.length - 1; n >= 0 && !latest; n -= 1) {
      const block = candidates[n] as IndexBlock;
      const read = readBlock(fd as number, block);
      if (read) latest = { block, read };
    }
    if (latest && latest.block.dirKey === key) {
      kept.push(latest.block);
      for (const job of latest.read.jobs) {
        if (!job.indexed) readEntry(join(dir, `${job.id}.json`), job.id);
        else entries.push(job);
      }
      continue;
    }
    const known = new Map<string, IndexedJob>();
    for (const job of latest?.read.jobs ?? []) if (job.indexed) known.set(job.id, job);
    const lines: Array<{ id: string; createdAt: string; line: Buffer }> = [];
    for (const name of source.ledger.entries(dir)) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const id = name.slice(0, -5);
      if (!JOB_ID.test(id) || id.slice(0, 2) !== shard) continue;
      const file = join(dir, name);
      const info = lstatSync(file, { throwIfNoEntry: false });
      if (!info) continue;
      const identity = fileIdentity(info);
      const old = known.get(id);
      if (latest && old && info.isFile() && lineIdentity(latest.read.body, old) === identity) {
        entries.push(old);
        const line = latest.read.body.subarray(old.lineStart, old.lineEnd);
        lines.push({ id, createdAt: old.createdAt, line });
        continue;
      }
      const job = readEntry(file, id);
      if (job === undefined) continue;
      const settled = info.mtimeMs < now - SETTLED_MS;
      const last = entries[entries.length - 1];
      if (job && isTerminal(job.state) && settled && last?.id === id) {
        const line = jobLine(job, identity, last.json() as Buffer);
        lines.push({ id, createdAt: job.createdAt, line });
      } else lines.push({ id, createdAt: '', line: readLine(id) });
    }
    const after = lstatSync(dir, { throwIfNoEntry: false });
    // Newest first in the block, so that a listing's entries come in runs already in order.
    if (before.mtimeMs < now - SETTLED_MS && after && directoryKey(after) === key) {
      const block = buildBlock(
        shard,
        key,
        lines.sort(newest).map((line) => line.line),
      );
      // Building the index anew (none yet): each block goes at once, not held to the end.
      if (fd === undefined) update(path, undefined, 0, [], [block]);
      else fresh.push(block);
    }
  }
  update(path, fd, size, kept, fresh);
  const since = options.since === undefined ? undefined : new Date(options.since).toISOString();
  const shown = since === undefined ? entries : entries.filter((entry) => entry.createdAt >= since);
  shown.sort(newest);
  return {
    entries: shown,
    problems,
    close: () => {
      if (fd !== undefined) closeSync(fd);
    },
  };
}

/**
 * Append the new blocks, or write the index again when most of it would be blocks no longer
 * used. The index is a cache: when it cannot be written (a full or read-only disk), listings
 * stay right and read the records instead.
 */
function update(
  path: string,
  fd: number | undefined,
  size: number,
  kept: readonly IndexBlock[],
  fresh: readonly Buffer[],
): void {
  if (fresh.length === 0) return;
  const live =
    kept.reduce((total, block) => total + block.bodyOffset + block.bodyLength - block.start, 0) +
    fresh.reduce((total, block) => total + block.length, 0);
  try {
    if (fd !== undefined && size > 2 * live + 8 * 1024 * 1024) compactIndex(path, fd, kept, fresh);
    else appendBlocks(path, fresh);
  } catch {
    // A cache that could not be written: the next listing reads those records again.
  }
}
