/** Writing the listing index again with only the blocks still in use: a new file beside it, renamed into place. */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, renameSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { removePrivateFile, writeAll } from '@yonder/core/backend-kit';
import { type IndexBlock, readAt } from './listing-index.js';

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Replace the index at `path` (open as `fd`) by the blocks `kept` (copied from it) and `fresh`.
 * Made exclusively beside it (never through a link) and renamed over it; not synced: the index
 * is a cache whose every block is checksummed, and a lost one only costs reading its records.
 * An appender that wrote to the old file meanwhile loses its block the same way.
 */
export function compactIndex(
  path: string,
  fd: number,
  kept: readonly IndexBlock[],
  fresh: readonly Buffer[],
): void {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const out = openSync(temporary, CREATE, 0o600);
  let open = true;
  try {
    for (const block of kept) {
      const bytes = readAt(fd, block.start, block.bodyOffset + block.bodyLength - block.start);
      if (bytes) writeAll(out, bytes);
    }
    for (const block of fresh) writeAll(out, block);
    open = false;
    closeSync(out);
    renameSync(temporary, path);
  } catch (error) {
    if (open) closeSync(out);
    removePrivateFile(temporary);
    throw error;
  }
}
