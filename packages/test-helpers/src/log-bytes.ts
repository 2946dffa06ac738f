/** Byte streams for tests of logs: pieces heavy in newlines, multi-byte characters and bytes that are not UTF-8, and the last lines of a log as `tail -n` counts them. */
import fc from 'fast-check';

/**
 * The last `count` lines of `bytes`, as `tail -n` gives them, computed another way than
 * yonder's code: lines start at 0 and after every newline but a final one.
 */
export function referenceTail(bytes: Buffer, count: number): Buffer {
  if (count <= 0 || bytes.length === 0) return Buffer.alloc(0);
  const starts = [0];
  for (let index = 0; index < bytes.length; index += 1)
    if (bytes[index] === 0x0a && index + 1 < bytes.length) starts.push(index + 1);
  return bytes.subarray(starts[Math.max(0, starts.length - count)]);
}

/** A piece of a log: a newline, a 2-, 3- or 4-byte character, Latin-1, bytes that are not UTF-8, NUL, CR LF, arbitrary bytes or text. */
export const logPiece: fc.Arbitrary<Buffer> = fc.oneof(
  fc.constant(Buffer.from('\n')),
  fc.constant(Buffer.from('☃')),
  fc.constant(Buffer.from('🎉\n')),
  fc.constant(Buffer.from('é')),
  fc.constant(Buffer.from('caf\xe9\n', 'latin1')),
  fc.constant(Buffer.from([0x80, 0xff, 0xfe, 0xc0, 0xaf])),
  fc.constant(Buffer.from('\r\n\0')),
  fc.uint8Array({ minLength: 1, maxLength: 8 }).map((bytes) => Buffer.from(bytes)),
  fc.string({ maxLength: 12 }).map((text) => Buffer.from(text)),
);

/** A log's bytes, up to `maxPieces` pieces of them (often no final newline). */
export function logBytes(maxPieces = 40): fc.Arbitrary<Buffer> {
  return fc.array(logPiece, { maxLength: maxPieces }).map((pieces) => Buffer.concat(pieces));
}

/** What a job writes, in the one to five writes it makes. */
export const logWrites: fc.Arbitrary<Buffer[]> = fc.array(logBytes(12), {
  minLength: 1,
  maxLength: 5,
});
