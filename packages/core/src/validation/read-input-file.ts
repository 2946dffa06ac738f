/** Files a user hands yonder (`--settings`, `--secrets-file`): regular files under a stated size, read without hanging. */
import { isUtf8 } from 'node:buffer';
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { YonderError } from '../errors/yonder-error.js';
import { readAtMost } from '../trust/private-files.js';

/** The largest `--settings` file yonder reads. */
export const MAX_SETTINGS_BYTES = 1024 * 1024;
/** The largest `--secrets-file` yonder reads. */
export const MAX_SECRETS_FILE_BYTES = 64 * 1024;

function describeSize(bytes: number): string {
  return bytes % (1024 * 1024) === 0
    ? `${bytes / (1024 * 1024)} MiB`
    : bytes % 1024 === 0
      ? `${bytes / 1024} KiB`
      : `${bytes} bytes`;
}

/**
 * Read a file the user named: it must be a regular file (not a FIFO, a device such as
 * /dev/zero, or a directory) of at most `maxBytes`. Opened non-blocking, so a FIFO never
 * hangs the process; read up to the limit only, so a file that grows is cut off, never
 * read whole. The messages name the file, never its content.
 * @throws YonderError `E_UNSAFE_VALUE`.
 */
/**
 * Bytes as UTF-8 text, or an `E_UNSAFE_VALUE` error naming `what`: never text with U+FFFD in
 * place of bytes that were not UTF-8.
 */
export function utf8Text(bytes: Buffer, what: string): string {
  if (!isUtf8(bytes))
    throw new YonderError(
      'E_UNSAFE_VALUE',
      `${what} is not valid UTF-8 text; yonder would change the bytes that are not. Give it as UTF-8.`,
    );
  return bytes.toString('utf8');
}

export function readInputFile(path: string, maxBytes: number): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new YonderError('E_UNSAFE_VALUE', `cannot read ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) {
      const what = info.isFIFO()
        ? 'a FIFO'
        : info.isCharacterDevice() || info.isBlockDevice()
          ? 'a device'
          : info.isDirectory()
            ? 'a directory'
            : 'not a regular file';
      throw new YonderError(
        'E_UNSAFE_VALUE',
        `${path} is ${what}; give a regular file (at most ${describeSize(maxBytes)}).`,
      );
    }
    const tooLarge = new YonderError(
      'E_UNSAFE_VALUE',
      `${path} is larger than ${describeSize(maxBytes)}, the most yonder reads here.`,
    );
    if (info.size > maxBytes) throw tooLarge;
    const bytes = readAtMost(fd, maxBytes);
    if (bytes === null) throw tooLarge;
    return utf8Text(bytes, path);
  } finally {
    closeSync(fd);
  }
}
