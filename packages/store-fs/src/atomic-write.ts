import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  linkSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

function writeTemporary(path: string, text: string): string {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    const buffer = Buffer.from(text, 'utf8');
    let written = 0;
    while (written < buffer.length) written += writeSync(fd, buffer, written);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    try {
      unlinkSync(temporary);
    } catch {}
    throw error;
  }
  closeSync(fd);
  return temporary;
}

/** Replace `path` with `text` atomically: a reader sees the old content or the new, never part. */
export function writeFileAtomic(path: string, text: string): void {
  const temporary = writeTemporary(path, text);
  try {
    renameSync(temporary, path);
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {}
    throw error;
  }
}

/** Create `path` with `text` atomically, failing with EEXIST if it exists. */
export function createFileAtomic(path: string, text: string): void {
  const temporary = writeTemporary(path, text);
  try {
    linkSync(temporary, path);
  } finally {
    try {
      unlinkSync(temporary);
    } catch {}
  }
}
