/** The listing index's file format: per shard of the ledger, a checksummed block of what a listing shows of each of its finished jobs, appended, the latest block of a shard counting only while the shard is unchanged. */
import type { Stats } from 'node:fs';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import type { JobRecord, JobState } from '@yonder/core';
import type { ListingEntryV1 } from '@yonder/core/backend-kit';
import { JOB_STATES, writeAll } from '@yonder/core/backend-kit';
import { checkLedgerFile } from './ledger-index.js';
import { JOB_ID } from './records.js';

/** The index's name in the state directory. */
export const LISTING_INDEX = 'listing.index';
/** A block's header starts a line with this tag (a job line starts with its hex id, never `S`). */
const TAG = 'S1';
const HEADER_START = Buffer.from(`\n${TAG}\t`, 'latin1');
const SHARD = /^[0-9a-f]{2}$/;
const KEY = /^[0-9.:]+$/;
const CRC = /^[0-9a-f]{8}$/;
const TAB = 9;
const NEWLINE = 10;
/** The states' names as bytes, by first letter and length (which tell them apart). */
const STATES = new Map<number, { state: JobState; bytes: Buffer }>(
  JOB_STATES.map((state) => [
    state.charCodeAt(0) * 64 + state.length,
    { state, bytes: Buffer.from(state, 'latin1') },
  ]),
);

/** The state named by bytes `from`..`to`, without making a string of them. */
function stateAt(body: Buffer, from: number, to: number): JobState | undefined {
  const known = STATES.get((body[from] as number) * 64 + (to - from));
  if (!known) return undefined;
  // A few bytes compared here: quicker than a call into Buffer.compare for each job.
  for (let at = 1; at < known.bytes.length; at += 1)
    if (body[from + at] !== known.bytes[at]) return undefined;
  return known.state;
}

/** An exit code (`-?[0-9]{1,10}`), null when empty, undefined when not a number. */
function numberAt(body: Buffer, from: number, to: number): number | null | undefined {
  if (from === to) return null;
  const negative = body[from] === 0x2d;
  const start = negative ? from + 1 : from;
  if (to - start < 1 || to - start > 10) return undefined;
  let value = 0;
  for (let at = start; at < to; at += 1) {
    const digit = (body[at] as number) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return negative ? -value : value;
}

/** One shard's block: the shard's jobs as they were while its directory had the key `dirKey`. */
export interface IndexBlock {
  readonly shard: string;
  readonly dirKey: string;
  /** Where the block starts (its leading newline) and its body, in the file. */
  readonly start: number;
  readonly bodyOffset: number;
  readonly bodyLength: number;
  readonly crc: number;
}

/** How much of a block is read at a time for the entries' JSON, which come in its order. */
const WINDOW_BYTES = 64 * 1024;

/**
 * Reads the JSON of a block's jobs as a listing asks for them, a window of the block at a time
 * into one buffer. A block's jobs are newest first, as a listing shows them, so each block is
 * read once, front to back, whatever the order of the blocks.
 */
export class BlockReader {
  private window: Buffer | null = null;
  private start = 0;
  private filled = 0;

  constructor(
    private readonly fd: number,
    private readonly end: number,
  ) {}

  /** The bytes at `offset`: a view of the window, until this reader reads again. */
  read(offset: number, length: number): Buffer {
    const at = offset - this.start;
    if (this.window && at >= 0 && at + length <= this.filled)
      return this.window.subarray(at, at + length);
    const size = Math.max(length, Math.min(WINDOW_BYTES, this.end - offset));
    if (!this.window || this.window.length < size) this.window = Buffer.allocUnsafe(size);
    let done = 0;
    while (done < size) {
      const count = readSync(this.fd, this.window, done, size - done, offset + done);
      if (count === 0) throw new Error('the listing index ended before a job it holds');
      done += count;
    }
    this.start = offset;
    this.filled = size;
    return this.window.subarray(0, length);
  }
}

/** A job line of a block: a finished job's fields and JSON, or (no identity) "read its record". */
export class IndexedJob implements ListingEntryV1 {
  constructor(
    readonly id: string,
    /** Whether it is indexed; false: its record must be read. */
    readonly indexed: boolean,
    readonly createdAt: string,
    readonly state: JobState,
    readonly exitCode: number | null,
    readonly signal: string | null,
    readonly name: string,
    readonly profile: string,
    /** Its line in the block's body, and its record file's identity there. */
    readonly lineStart: number,
    readonly identityEnd: number,
    readonly lineEnd: number,
    private readonly reader: BlockReader | null,
    /** Its JSON in the file. */
    private readonly jsonOffset: number,
    private readonly jsonLength: number,
  ) {}

  json(): Uint8Array {
    if (!this.reader) throw new Error(`job ${this.id} is not indexed`);
    return this.reader.read(this.jsonOffset, this.jsonLength);
  }
}

/** A block read back: its body (until the next block is read) and its jobs, newest first. */
export interface ReadBlock {
  readonly body: Buffer;
  readonly jobs: IndexedJob[];
}

/**
 * A file's identity as `lstat` sees it: inode, size, modification and change times. A record
 * is replaced by a new file renamed into place, and a change time cannot be set back.
 */
export function fileIdentity(info: Stats): string {
  return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
}

/** A directory's identity: any file created, renamed in or removed changes its times. */
export function directoryKey(info: Stats): string {
  return `${info.ino}:${info.mtimeMs}:${info.ctimeMs}`;
}

/** Read `length` bytes at `offset`; null when the file is shorter. */
export function readAt(fd: number, offset: number, length: number): Buffer | null {
  const buffer = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const count = readSync(fd, buffer, done, length - done, offset + done);
    if (count === 0) return null;
    done += count;
  }
  return buffer;
}

function parseHeader(text: string, start: number, bodyOffset: number): IndexBlock | undefined {
  const [tag, shard, dirKey, length, crc, ...rest] = text.split('\t');
  if (tag !== TAG || rest.length > 0 || !shard || !SHARD.test(shard) || !dirKey) return undefined;
  if (!KEY.test(dirKey) || !length || !/^[0-9]{1,10}$/.test(length) || !crc || !CRC.test(crc))
    return undefined;
  return {
    shard,
    dirKey,
    start,
    bodyOffset,
    bodyLength: Number(length),
    crc: Number.parseInt(crc, 16),
  };
}

/** The offset of the next block header at or after `from`, or -1. */
function nextHeader(fd: number, from: number, size: number): number {
  const chunk = Buffer.allocUnsafe(64 * 1024);
  for (let at = from; at < size; at += chunk.length - HEADER_START.length) {
    const count = readSync(fd, chunk, 0, Math.min(chunk.length, size - at), at);
    const found = chunk.subarray(0, count).indexOf(HEADER_START);
    if (found >= 0) return at + found;
    if (at + count >= size) return -1;
  }
  return -1;
}

/**
 * Every well-formed block header, by shard in file order, jumping from one block to the next;
 * after a torn or foreign stretch, reading on at the next header. Bodies are not read.
 */
export function scanBlocks(fd: number, size: number): Map<string, IndexBlock[]> {
  const blocks = new Map<string, IndexBlock[]>();
  const head = Buffer.allocUnsafe(256);
  let at = nextHeader(fd, 0, size);
  while (at >= 0 && at < size) {
    const count = readSync(fd, head, 0, Math.min(head.length, size - at), at);
    const end = head.subarray(0, count).indexOf(NEWLINE, 1);
    const block =
      end > 0 ? parseHeader(head.toString('latin1', 1, end), at, at + end + 1) : undefined;
    if (block && block.bodyOffset + block.bodyLength <= size) {
      const list = blocks.get(block.shard) ?? [];
      list.push(block);
      blocks.set(block.shard, list);
      at = nextHeader(fd, block.bodyOffset + block.bodyLength, size);
    } else {
      at = nextHeader(fd, at + 1, size);
    }
  }
  return blocks;
}

const QUOTE = 34;
const BACKSLASH = 92;

/** A JSON string field: the common case without escapes read as it is, the rest parsed. */
function decodeString(body: Buffer, from: number, to: number): string {
  const plain = to - from >= 2 && body[from] === QUOTE && body[to - 1] === QUOTE;
  let escaped = !plain;
  let ascii = true;
  for (let at = from + 1; at < to - 1 && !escaped; at += 1) {
    const byte = body[at] as number;
    escaped = byte === BACKSLASH;
    ascii &&= byte < 0x80;
  }
  // latin1 is UTF-8 for ASCII, and much quicker to decode.
  if (!escaped) return body.toString(ascii ? 'latin1' : 'utf8', from + 1, to - 1);
  const value: unknown = JSON.parse(body.toString('utf8', from, to));
  if (typeof value !== 'string') throw new Error('not a string');
  return value;
}

let scratch = Buffer.allocUnsafe(0);
const interned = new Map<string, string>();

/** One string for each name, profile or signal, however many jobs share it. */
function intern(text: string): string {
  const known = interned.get(text);
  if (known !== undefined) return known;
  if (interned.size < 10_000) interned.set(text, text);
  return text;
}

/** The record identity of an indexed job's line, from the body its block was read into. */
export function lineIdentity(body: Buffer, job: IndexedJob): string {
  return body.toString('latin1', job.id.length + 1 + job.lineStart, job.identityEnd);
}

/**
 * The jobs of a block whose checksum holds, or undefined (a torn, damaged or foreign block).
 * Its body is read into one buffer used again for the next block.
 */
export function readBlock(fd: number, block: IndexBlock): ReadBlock | undefined {
  if (scratch.length < block.bodyLength) scratch = Buffer.allocUnsafe(block.bodyLength);
  const body = scratch.subarray(0, block.bodyLength);
  let done = 0;
  while (done < body.length) {
    const count = readSync(fd, body, done, body.length - done, block.bodyOffset + done);
    if (count === 0) return undefined;
    done += count;
  }
  if (crc32(body) !== block.crc) return undefined;
  const reader = new BlockReader(fd, block.bodyOffset + block.bodyLength);
  const jobs: IndexedJob[] = [];
  const tabs: number[] = [];
  let end = 0;
  // Field n (1…8) of the line: from one past the tab before it to the next tab or the line's end.
  const from = (n: number): number => (tabs[n - 1] as number) + 1;
  const to = (n: number): number => (tabs[n] as number | undefined) ?? end;
  try {
    for (let start = 0; start < body.length; ) {
      end = body.indexOf(NEWLINE, start);
      if (end < 0) return undefined;
      tabs.length = 0;
      for (let at = start; tabs.length < 8; ) {
        const tab = body.indexOf(TAB, at);
        if (tab < 0 || tab > end) break;
        tabs.push(tab);
        at = tab + 1;
      }
      const id = body.toString('latin1', start, tabs[0] ?? end);
      if (!JOB_ID.test(id) || id.slice(0, 2) !== block.shard) return undefined;
      if (tabs.length === 1 && body.toString('latin1', from(1), to(1)) === '-') {
        jobs.push(
          new IndexedJob(
            id,
            false,
            '',
            'unknown',
            null,
            null,
            '',
            '',
            start,
            0,
            end + 1,
            null,
            0,
            0,
          ),
        );
      } else if (tabs.length === 8) {
        const state = stateAt(body, from(3), to(3));
        const exitCode = numberAt(body, from(4), to(4));
        if (state === undefined || exitCode === undefined) return undefined;
        const jsonStart = from(8);
        jobs.push(
          new IndexedJob(
            id,
            true,
            decodeString(body, from(2), to(2)),
            state,
            exitCode,
            from(5) === to(5) ? null : intern(decodeString(body, from(5), to(5))),
            intern(decodeString(body, from(6), to(6))),
            intern(decodeString(body, from(7), to(7))),
            start,
            to(1),
            end + 1,
            reader,
            block.bodyOffset + jsonStart,
            end - jsonStart,
          ),
        );
      } else return undefined;
      start = end + 1;
    }
  } catch {
    return undefined;
  }
  return { body, jobs };
}

/** A finished job's line: its record file's identity, what a listing shows, and its JSON. */
export function jobLine(job: JobRecord, identity: string, json: Buffer): Buffer {
  const fields = [
    job.id,
    identity,
    JSON.stringify(job.createdAt),
    job.state,
    job.exitCode === null ? '' : String(job.exitCode),
    job.signal === null ? '' : JSON.stringify(job.signal),
    JSON.stringify(job.name),
    JSON.stringify(job.profile),
  ];
  return Buffer.concat([Buffer.from(`${fields.join('\t')}\t`), json, Buffer.from('\n')]);
}

/** The line of a job whose record every listing reads (not finished, unreadable, or just written). */
export function readLine(id: string): Buffer {
  return Buffer.from(`${id}\t-\n`, 'latin1');
}

/** A shard's block: a header with its directory's key, its body's length and checksum. */
export function buildBlock(shard: string, dirKey: string, lines: readonly Buffer[]): Buffer {
  const body = Buffer.concat(lines);
  const crc = crc32(body).toString(16).padStart(8, '0');
  const header = `\n${TAG}\t${shard}\t${dirKey}\t${body.length}\t${crc}\n`;
  return Buffer.concat([Buffer.from(header, 'latin1'), body]);
}

const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

/**
 * Append blocks, each in one write: concurrent appenders never split one another's (and a torn
 * one fails its checksum). Never through a link, never to a file that is not the user's own.
 */
export function appendBlocks(path: string, blocks: readonly Buffer[]): void {
  const fd = openSync(path, APPEND, 0o600);
  try {
    checkLedgerFile(path, fstatSync(fd));
    for (const block of blocks) writeAll(fd, block);
  } finally {
    closeSync(fd);
  }
}
