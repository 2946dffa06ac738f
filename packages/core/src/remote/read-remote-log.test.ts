import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalTransport } from '../transport/local-transport.js';
import { readRemoteLog } from './remote-scripts.js';

let scratch: string;
const transport = createLocalTransport();

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-remote-log-'));
});
afterEach(() => rmSync(scratch, { recursive: true, force: true }));

describe('readRemoteLog', () => {
  it('advances by the bytes read, not by the decoded text: Latin-1 and split characters lose nothing', async () => {
    const log = join(scratch, 'job.log');
    // Latin-1 "café", a 3-byte character, an unpaired continuation byte, a 4-byte character.
    const bytes = Buffer.concat([
      Buffer.from('caf\xe9\n', 'latin1'),
      Buffer.from('snow ☃ man\n'),
      Buffer.from([0x80, 0x0a]),
      Buffer.from('🎉 end\n'),
    ]);
    writeFileSync(log, bytes);
    const offsets: number[] = [];
    let offset = 0;
    for (let reads = 0; reads < 100 && offset < bytes.length; reads += 1) {
      const chunk = await readRemoteLog(transport, log, { offset, maxBytes: 5 });
      expect(chunk.exists).toBe(true);
      expect(chunk.offset - offset).toBe(Math.min(5, bytes.length - offset));
      offset = chunk.offset;
      offsets.push(offset);
    }
    expect(offset).toBe(bytes.length);
    expect(offsets.length).toBe(Math.ceil(bytes.length / 5));
  });

  it('follows by offset: ASCII text arrives whole, and an offset past the end stays at the end', async () => {
    const log = join(scratch, 'job.log');
    writeFileSync(log, 'one\ntwo\n');
    const first = await readRemoteLog(transport, log, { tailLines: 10 });
    expect(first).toMatchObject({ exists: true, text: 'one\ntwo\n', offset: 8 });
    appendFileSync(log, 'three\n');
    const next = await readRemoteLog(transport, log, { offset: first.offset });
    expect(next).toMatchObject({ text: 'three\n', offset: 14 });
    expect(await readRemoteLog(transport, log, { offset: 100 })).toMatchObject({
      text: '',
      offset: 14,
    });
  });

  it('the tail is the last lines of the last maxBytes bytes; a missing log is not an error', async () => {
    const log = join(scratch, 'job.log');
    writeFileSync(log, 'a\nbb\nccc\ndddd\n');
    expect(await readRemoteLog(transport, log, { tailLines: 2 })).toMatchObject({
      text: 'ccc\ndddd\n',
      offset: 14,
    });
    expect(await readRemoteLog(transport, log, { tailLines: 10, maxBytes: 7 })).toMatchObject({
      text: 'c\ndddd\n',
      offset: 14,
    });
    const missing = await readRemoteLog(transport, join(scratch, 'none'), { tailLines: 1 });
    expect(missing).toMatchObject({ exists: false, offset: 0 });
    expect(missing.message).toMatch(/not written any output/);
  });
});
