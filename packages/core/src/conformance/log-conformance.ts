/** The conformance checks of `readLog`: a real job's bytes come back exactly (not UTF-8, characters cut by chunks, no final newline), by tail of lines, tail of bytes and offset, through the backend and through the manager. */
import { backendJob } from '../manager/manager-context.js';
import type { LogChunkV1, ReadLogOptionsV1 } from '../spec/backend/v1/backend-v1.js';
import type { JobRecord } from '../spec/job.js';
import type { Profile } from '../spec/profile.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import type { ConformanceHarness } from './backend-conformance.js';
import type { TestFunction } from './types.js';

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Backend conformance: ${message}`);
}

/**
 * The lines the job prints: Latin-1, 2-, 3- and 4-byte characters at every alignment, bytes
 * that are not UTF-8 (a lone continuation byte, 0xff 0xfe, an overlong "/", a cut sequence),
 * NUL, CR LF, an empty line, and a last line without a newline.
 */
export const LOG_LINES: readonly Buffer[] = [
  Buffer.from('caf\xe9 au lait', 'latin1'),
  Buffer.from('snow ☃☃ man ü'),
  Buffer.from('x🎉y🎉🎉'),
  Buffer.from([0x80, 0x41, 0xff, 0xfe, 0xc0, 0xaf, 0xe2, 0x98]),
  Buffer.from('nul\0byte\r'),
  Buffer.alloc(0),
  Buffer.from('€uro ☃'),
  Buffer.from('end, no newline ☃'),
];

/** The log: the lines joined by "\n", the last without one. */
export const LOG_BYTES: Buffer = Buffer.concat(
  LOG_LINES.flatMap((line, index) =>
    index < LOG_LINES.length - 1 ? [line, Buffer.from('\n')] : [line],
  ),
);

/** The last `count` lines of LOG_BYTES, as `tail -n` gives them. */
function lastLines(count: number): Buffer {
  if (count <= 0) return Buffer.alloc(0);
  const from = Math.max(0, LOG_LINES.length - count);
  const kept = LOG_LINES.slice(from);
  return Buffer.concat(
    kept.flatMap((line, index) => (index < kept.length - 1 ? [line, Buffer.from('\n')] : [line])),
  );
}

/** A printf format that prints `bytes` exactly: every byte as an octal escape. */
export function printfFormat(bytes: Buffer): string {
  return [...bytes].map((byte) => `\\${byte.toString(8).padStart(3, '0')}`).join('');
}

function same(actual: Buffer, expected: Buffer, what: string): void {
  check(
    actual.equals(expected),
    `${what}: expected the bytes ${expected.toString('hex')}, got ${actual.toString('hex')}`,
  );
}

/** Read the whole log by offsets of at most `maxBytes`, checking each chunk's offsets. */
async function readByOffsets(
  read: (options: ReadLogOptionsV1) => Promise<LogChunkV1>,
  maxBytes: number,
): Promise<Buffer> {
  const pieces: Buffer[] = [];
  let offset = 0;
  for (let reads = 0; reads <= LOG_BYTES.length; reads += 1) {
    const chunk = await read({ offset, maxBytes });
    check(chunk.exists, 'the log must exist');
    check(chunk.start === offset, `a read from ${offset} must start there, not at ${chunk.start}`);
    check(
      chunk.offset === chunk.start + chunk.data.length,
      `offset must be start + the bytes returned (${chunk.offset} ≠ ${chunk.start} + ${chunk.data.length})`,
    );
    check(
      chunk.data.length <= maxBytes,
      `a read of at most ${maxBytes} returned ${chunk.data.length}`,
    );
    check(chunk.size === LOG_BYTES.length, `size must be ${LOG_BYTES.length}, got ${chunk.size}`);
    pieces.push(chunk.data);
    offset = chunk.offset;
    if (offset >= LOG_BYTES.length) break;
    check(chunk.data.length > 0, `a read from ${offset}, before the end, returned nothing`);
  }
  return Buffer.concat(pieces);
}

/** The `readLog` checks, with the harness and job runner of `backendConformance`. */
export function logConformance(
  test: TestFunction,
  options: {
    profile: Profile;
    timeout: number;
    createTransport: (profile: Profile) => TransportV1;
    withHarness: (fn: (h: ConformanceHarness) => Promise<void>) => () => Promise<void>;
    run: (h: ConformanceHarness, argv: string[]) => Promise<JobRecord>;
  },
): void {
  const { timeout } = options;

  const finished = async (h: ConformanceHarness): Promise<JobRecord> => {
    const job = await options.run(h, ['printf', printfFormat(LOG_BYTES)]);
    check(job.state === 'succeeded', `expected succeeded, got ${job.state} (${job.reason ?? ''})`);
    // Some schedulers make the log visible a little after the job ends.
    const deadline = Date.now() + 15_000;
    while ((await h.manager.logs(job.id, { all: true })).chunk.data.length < LOG_BYTES.length) {
      check(Date.now() < deadline, 'the log never held everything the job printed');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return job;
  };

  const direct =
    (h: ConformanceHarness, job: JobRecord, transport: TransportV1) => (read: ReadLogOptionsV1) => {
      const forBackend = backendJob(job, h.backend);
      return h.backend.readLog(forBackend, read, {
        transport,
        options: forBackend.options,
        stateDirectory: h.scratch,
      });
    };

  test(
    'backend: readLog returns the bytes exactly, by offset, tail of lines and tail of bytes',
    options.withHarness(async (h) => {
      const job = await finished(h);
      const transport = options.createTransport(job.profileSnapshot);
      try {
        const read = direct(h, job, transport);
        for (const maxBytes of [1, 3, 7])
          same(await readByOffsets(read, maxBytes), LOG_BYTES, `read by offsets of ${maxBytes}`);
        for (let count = 0; count <= LOG_LINES.length + 1; count += 1) {
          const chunk = await read({ tailLines: count });
          same(chunk.data, lastLines(count), `tailLines ${count}`);
          check(chunk.start === LOG_BYTES.length - chunk.data.length, `tailLines ${count}: start`);
          check(chunk.offset === LOG_BYTES.length, `tailLines ${count}: offset`);
        }
        const cut = await read({ tailLines: 3, maxBytes: 5 });
        same(cut.data, lastLines(3).subarray(0, 5), 'tailLines 3 with maxBytes 5');
        check(
          cut.offset === cut.start + 5 && cut.size === LOG_BYTES.length,
          'a cut tail says where it stopped',
        );
        for (const count of [0, 1, 2, 5, LOG_BYTES.length, LOG_BYTES.length + 10])
          same(
            (await read({ tailBytes: count })).data,
            LOG_BYTES.subarray(Math.max(0, LOG_BYTES.length - count)),
            `tailBytes ${count}`,
          );
        const past = await read({ offset: LOG_BYTES.length + 100 });
        check(
          past.data.length === 0 && past.offset === LOG_BYTES.length,
          'a read past the end returns nothing, at the end',
        );
      } finally {
        await transport.close();
      }
    }),
    timeout + 60_000,
  );

  test(
    'backend: logs, logs --lines, --bytes and --follow through the manager return the exact bytes, in chunks of any size',
    options.withHarness(async (h) => {
      const job = await finished(h);
      for (const chunkBytes of [2, 5]) {
        const all = await h.manager.logs(job.id, { all: true, chunkBytes });
        same(all.chunk.data, LOG_BYTES, `logs --all in chunks of ${chunkBytes}`);
        same(
          (await h.manager.logs(job.id, { lines: 4, chunkBytes })).chunk.data,
          lastLines(4),
          'logs --lines 4',
        );
        same(
          (await h.manager.logs(job.id, { bytes: 9, chunkBytes })).chunk.data,
          LOG_BYTES.subarray(-9),
          'logs --bytes 9',
        );
        const pieces: Buffer[] = [];
        const followed = await h.manager.follow(
          job.id,
          (chunk) => {
            check(
              chunk.data.length <= chunkBytes || chunk.start === 0,
              `a chunk of ${chunk.data.length} bytes is over ${chunkBytes}`,
            );
            pieces.push(Buffer.from(chunk.data));
          },
          { all: true, chunkBytes },
        );
        same(Buffer.concat(pieces), LOG_BYTES, `logs --follow in chunks of ${chunkBytes}`);
        check(followed.job.state === 'succeeded' && !followed.aborted, 'follow ends with the job');
      }
    }),
    timeout + 60_000,
  );

  test(
    'backend: a job killed by a signal leaves only what it wrote (no line of the shell that ran it, as "Killed")',
    options.withHarness(async (h) => {
      for (const signal of ['KILL', 'SEGV']) {
        const job = await options.run(h, ['sh', '-c', `printf 'x\\n'; kill -${signal} $$`]);
        check(job.state === 'failed', `killed by ${signal}: expected failed, got ${job.state}`);
        const deadline = Date.now() + 15_000;
        const read = async () => (await h.manager.logs(job.id, { all: true })).chunk.data;
        let data = await read();
        while (data.length < 2) {
          check(Date.now() < deadline, `killed by ${signal}: the log never held what it printed`);
          await new Promise((resolve) => setTimeout(resolve, 250));
          data = await read();
        }
        same(data, Buffer.from('x\n'), `the log of a job killed by ${signal}`);
      }
    }),
    timeout + 60_000,
  );
}
