/**
 * Issue 11, damaged records: a record that fails its schema (a missing field, a wrong type, a
 * byte flipped, an id that is not its file's) is reported by path and left out; no command
 * crashes, and every other job still lists and works. Includes the record fuzz.
 */
import { chownSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CliResult,
  cleanupUsers,
  type InstalledCli,
  jsonOf,
  ownedDir,
  runAs,
  type TestUser,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let cli: InstalledCli;
let state: string;
const ids: Record<'quick' | 'failed' | 'other' | 'running', string> = {
  quick: '',
  failed: '',
  other: '',
  running: '',
};
let originals: Map<string, string>;

async function yonder(args: string[]): Promise<CliResult> {
  return runAs(victim, cli.bin, args, { env: { YONDER_STATE_DIR: state }, timeoutMs: 30_000 });
}

function recordPath(id: string): string {
  return join(state, 'jobs', id.slice(0, 2), `${id}.json`);
}

/** Replace a record's bytes as the victim's own file (written aside, then renamed). */
function writeRecord(id: string, text: string | Buffer): void {
  const path = recordPath(id);
  const aside = `${path}.fuzz`;
  writeFileSync(aside, text, { mode: 0o600 });
  chownSync(aside, victim.uid, victim.gid);
  renameSync(aside, path);
}

/** What a JavaScript error that escaped looks like, in a message or a stack. */
const CRASH =
  /TypeError|RangeError|ReferenceError|E_INTERNAL|Cannot read properties|is not a function|is not iterable|Cannot convert|Invalid time value|\n\s+at /;

/** No crash: a known exit status, no signal, no raw JavaScript error, one JSON document with --json. */
function expectNoCrash(result: CliResult, args: readonly string[], what: string): void {
  const context = `${what}: yonder ${args.join(' ')}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
  expect(result.signal, context).toBeNull();
  expect(result.stderr + result.stdout, context).not.toMatch(CRASH);
  if (args.includes('--json')) {
    const doc = jsonOf(result);
    expect(typeof doc.ok, context).toBe('boolean');
    if (!doc.ok) expect(result.code, context).toBe(1);
  }
}

beforeAll(async () => {
  ({ victim, cli } = usersWithCli());
  state = join(ownedDir(victim, 'records'), 'state');
  const submit = async (...argv: string[]) => {
    const result = await yonder(['submit', '--', ...argv]);
    expect(result.code, result.stderr).toBe(0);
    return result.stdout.trim();
  };
  ids.quick = await submit('true');
  ids.failed = await submit('sh', '-c', 'echo out; exit 3');
  ids.other = await submit('echo', 'other');
  ids.running = await submit('sleep', '300');
  await yonder(['wait', ids.quick, ids.failed, ids.other]);
  originals = new Map(Object.values(ids).map((id) => [id, readFileSync(recordPath(id), 'utf8')]));
}, 120_000);

afterAll(async () => {
  writeRecord(ids.running, originals.get(ids.running) as string);
  await yonder(['cancel', ids.running]);
  cleanupUsers();
});

/** Every job but `except` lists, and one of them answers status and logs. */
async function othersWork(except: string, what: string): Promise<void> {
  const all = await yonder(['list', '--all', '--no-refresh', '--json']);
  expectNoCrash(all, ['list', '--all', '--json'], what);
  const listed = jsonOf(all).result.map((job: { id: string }) => job.id);
  for (const id of Object.values(ids)) if (id !== except) expect(listed, what).toContain(id);
  const other = except === ids.other ? ids.quick : ids.other;
  const status = await yonder(['status', other, '--json']);
  expect(jsonOf(status).result[0].state, what).toBe('succeeded');
  const logs = await yonder(['logs', other]);
  expect(logs.code, what).toBe(0);
}

describe('damaged records', () => {
  it('a record without its cancel field: list works and names it; every other job lists', async () => {
    const job = JSON.parse(originals.get(ids.quick) as string);
    delete job.cancel;
    writeRecord(ids.quick, JSON.stringify(job));
    try {
      const list = await yonder(['list', '--json']);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stderr).toContain(recordPath(ids.quick));
      expect(list.stderr).toContain('cancel');
      await othersWork(ids.quick, 'no cancel field');
    } finally {
      writeRecord(ids.quick, originals.get(ids.quick) as string);
    }
  });

  it.each(['data', 'profileSnapshot', 'spec', 'history'])(
    '%s: null makes logs, cancel, wait and status answer E_CORRUPT_RECORD with the path',
    async (field) => {
      const job = JSON.parse(originals.get(ids.failed) as string);
      job[field] = null;
      writeRecord(ids.failed, JSON.stringify(job));
      try {
        const logs = await yonder(['logs', ids.failed]);
        expectNoCrash(logs, ['logs', ids.failed], `${field}: null`);
        expect(logs.code).toBe(1);
        expect(logs.stderr).toContain(`Corrupt record ${recordPath(ids.failed)}`);
        for (const args of [
          ['cancel', ids.failed, '--json'],
          ['wait', ids.failed, '--json'],
          ['status', ids.failed, '--json'],
        ]) {
          const result = await yonder(args);
          expectNoCrash(result, args, `${field}: null`);
          expect(result.code).toBe(1);
          expect(jsonOf(result).error).toMatchObject({
            code: 'E_CORRUPT_RECORD',
            message: expect.stringContaining(recordPath(ids.failed)),
          });
        }
        await othersWork(ids.failed, `${field}: null`);
      } finally {
        writeRecord(ids.failed, originals.get(ids.failed) as string);
      }
    },
  );

  it('a record copied under another job’s file name never acts on the job it describes', async () => {
    // The running job's record, put where the finished job's is: a cancel of the finished job
    // must not stop the running one.
    writeRecord(ids.other, originals.get(ids.running) as string);
    try {
      const cancel = await yonder(['cancel', ids.other, '--json']);
      expect(cancel.code).toBe(1);
      expect(jsonOf(cancel).error.message).toContain(`not ${ids.other}, whose file it is`);
      const running = await yonder(['status', ids.running, '--json']);
      expect(jsonOf(running).result[0].state).toBe('running');
    } finally {
      writeRecord(ids.other, originals.get(ids.other) as string);
    }
  });

  it('a __proto__ key anywhere in a record makes it corrupt', async () => {
    const text = (originals.get(ids.quick) as string).replace(
      '"data":{',
      '"data":{"__proto__":{"polluted":true},',
    );
    writeRecord(ids.quick, text);
    try {
      const status = await yonder(['status', ids.quick, '--json']);
      expect(jsonOf(status).error.message).toContain('"__proto__" is a reserved name');
      await othersWork(ids.quick, '__proto__ in data');
    } finally {
      writeRecord(ids.quick, originals.get(ids.quick) as string);
    }
  });
});

// ------------------------------------------------------------------ the fuzz

/** A small seeded generator (mulberry32), so that a failure can be replayed with its seed. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIELDS = [
  'id',
  'state',
  'cancel',
  'data',
  'data.pid',
  'data.jobDir',
  'data.log',
  'profileSnapshot',
  'profileSnapshot.name',
  'profileSnapshot.backend',
  'history',
  'history.0',
  'history.0.to',
  'spec',
  'spec.argv',
  'spec.env',
  'spec.resources',
  'exitCode',
  'createdAt',
  'misses',
  'revision',
  'error',
  'submitter',
  'externalId',
  'name',
];
const VALUES: unknown[] = [null, 0, -1, 1e308, 'x', '', [], {}, true, [null], { a: 1 }];

function mutate(text: string, random: () => number): { text: string | Buffer; what: string } {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const kind = random();
  if (kind < 0.35) {
    const bytes = Buffer.from(text, 'utf8');
    const flips = 1 + Math.floor(random() * 4);
    const at: number[] = [];
    for (let flip = 0; flip < flips; flip += 1) {
      const index = Math.floor(random() * bytes.length);
      bytes[index] = Math.floor(random() * 256);
      at.push(index);
    }
    return { text: bytes, what: `bytes flipped at ${at.join(', ')}` };
  }
  if (kind < 0.45) {
    const cut = Math.floor(random() * text.length);
    return { text: text.slice(0, cut), what: `cut at ${cut}` };
  }
  const job = JSON.parse(text);
  const path = pick(FIELDS).split('.');
  let node = job;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key];
  }
  const last = path[path.length - 1] as string;
  if (kind < 0.6) {
    delete node[last];
    return { text: JSON.stringify(job), what: `${path.join('.')} removed` };
  }
  const value = pick(VALUES);
  node[last] = value;
  return { text: JSON.stringify(job), what: `${path.join('.')} = ${JSON.stringify(value)}` };
}

describe('record fuzz', () => {
  it('random byte flips and wrong types: no command crashes, every other job keeps working', async () => {
    const seed = Number(process.env.YONDER_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const random = generator(seed);
    const rounds = Number(process.env.YONDER_FUZZ_ROUNDS ?? 30);
    const targets = [ids.quick, ids.failed, ids.other, ids.running];
    for (let round = 0; round < rounds; round += 1) {
      const target = targets[Math.floor(random() * targets.length)] as string;
      const { text, what } = mutate(originals.get(target) as string, random);
      const label = `seed ${seed} round ${round}: ${target} ${what}`;
      writeRecord(target, text);
      try {
        const commands = [
          ['list'],
          ['list', '--json'],
          ['list', '--all', '--json'],
          ['status', target],
          ['status', target, '--json'],
          ['logs', target],
          ['wait', '--timeout', '1', target, '--json'],
        ];
        // A running job is not cancelled here: the fuzz must not stop what it has not broken.
        if (target !== ids.running) commands.push(['cancel', target, '--json']);
        for (const args of commands) expectNoCrash(await yonder(args), args, label);
        await othersWork(target, label);
      } finally {
        writeRecord(target, originals.get(target) as string);
      }
    }
    // The running job was never signalled by any of it.
    const running = await yonder(['status', ids.running, '--no-refresh', '--json']);
    expect(jsonOf(running).result[0].state, `seed ${seed}`).toBe('running');
  }, 600_000);
});
