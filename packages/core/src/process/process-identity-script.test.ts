import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runLocal } from '../transport/local-transport.js';
import { parseProcStat, readBootId, readProcessStat } from './process-identity.js';
import { PROCESS_IDENTITY_FUNCTIONS } from './process-identity-script.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-identity-script-'));
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Run the functions with a few lines of sh after them; $1… are `args`. */
async function sh(body: string, args: string[]): Promise<string> {
  const result = await runLocal([
    'sh',
    '-c',
    `${PROCESS_IDENTITY_FUNCTIONS}\n${body}`,
    'x',
    ...args,
  ]);
  expect(result.stderr).toBe('');
  return result.stdout;
}

/** What proc_stat makes of a file holding `text`: "state start", or "FAIL". */
async function procStat(text: string): Promise<string> {
  const file = join(scratch, 'stat');
  writeFileSync(file, text);
  return sh('if proc_stat "$1"; then printf "%s %s" "$ps_state" "$ps_start"; else echo FAIL; fi', [
    file,
  ]);
}

/** A /proc/PID/stat line with 52 fields, the command name as given and field 22 = startTime. */
function statLine(comm: string, state: string, startTime: string): string {
  const fields: string[] = ['123', `(${comm})`, state];
  for (let field = 4; field <= 52; field += 1)
    fields.push(field === 22 ? startTime : String(field * 10));
  return `${fields.join(' ')}\n`;
}

function expected(text: string): string {
  const parsed = parseProcStat(text);
  return parsed ? `${parsed.state} ${parsed.startTime}` : 'FAIL\n';
}

describe('proc_stat (sh) reads /proc/PID/stat as parseProcStat does', () => {
  it.each([
    ['a plain name', statLine('cat', 'R', '91520')],
    ['spaces and ") " in the name', statLine('a) b (c) ', 'S', '777')],
    ['a name that looks like more fields', statLine(') R 1 2 3 4 5', 'Z', '42')],
    ['a line break in the name', statLine('a\nb) c', 'S', '4242')],
    ['glob characters in the name', statLine('* ?[a]', 'S', '5')],
  ])('%s', async (_what, text) => {
    expect(await procStat(text)).toBe(expected(text));
    expect(expected(text)).not.toBe('FAIL\n');
  });

  it.each([
    ['empty text', ''],
    ['no parentheses', '123 cat S 1 2 3'],
    ['too few fields', '123 (cat) S 1 2 3'],
    ['a non-numeric start time', statLine('x', 'S', 'abc')],
  ])('refuses %s', async (_what, text) => {
    expect(await procStat(text)).toBe('FAIL\n');
  });

  it('agrees with parseProcStat on arbitrary command names (up to 15 bytes, any but NUL)', async () => {
    // Mostly the pieces that confuse a parser, and now and then any byte.
    const piece = fc.oneof(
      fc.constantFrom(') ', '(', ')', ' ', '\n', '\t', 'S', '7', '*', ') R 1 2'),
      fc.string({ unit: 'binary-ascii', maxLength: 3 }),
    );
    const comm = fc
      .array(piece, { maxLength: 8 })
      .map((pieces) => pieces.join('').slice(0, 15))
      .filter((name) => !name.includes('\0'));
    await fc.assert(
      fc.asyncProperty(
        comm,
        fc.constantFrom('R', 'S', 'Z'),
        fc.nat(),
        async (comm, state, start) => {
          const text = statLine(comm, state, String(start));
          expect(await procStat(text)).toBe(expected(text));
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);

  it('fails, quietly, for a process that does not exist', async () => {
    expect(await sh('proc_stat /proc/999999999/stat || echo gone', [])).toBe('gone\n');
  });
});

describe('is_job, read_boot and read_host', () => {
  const isJob = (pid: number | string, start: string) =>
    sh('if is_job "$1" "$2"; then echo yes; else echo no; fi', [String(pid), start]);

  it('knows a live process by pid and start time, even with ") " in its name', async () => {
    const link = join(scratch, 'x) y (z) ');
    symlinkSync('/bin/sleep', link);
    const child = spawn(link, ['30'], { stdio: 'ignore' });
    children.push(child);
    const pid = child.pid as number;
    await expect.poll(() => readFileSync(`/proc/${pid}/comm`, 'utf8')).toBe('x) y (z) \n');
    const start = readProcessStat(pid)?.startTime as string;
    expect(await isJob(pid, start)).toBe('yes\n');
    expect(await isJob(pid, String(Number(start) + 1))).toBe('no\n');
  });

  it('never takes pid 1, 0, a negative, a non-number or a zombie for a job', async () => {
    const init = readProcessStat(1)?.startTime as string;
    expect(init).toMatch(/^\d+$/);
    expect(await isJob(1, init)).toBe('no\n');
    expect(await isJob(0, '0')).toBe('no\n');
    expect(await isJob('-1', init)).toBe('no\n');
    expect(await isJob('1 2', init)).toBe('no\n');
    expect(await isJob('99999999999999999999', '0')).toBe('no\n');
    // A child its parent never reaps: it ends after sh has become `sleep 30`, which does not
    // wait for it (one that ended while sh still ran could be reaped by sh).
    const parent = spawn('sh', ['-c', 'sleep 1 & echo $!; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    children.push(parent);
    const line = await new Promise<string>((resolve) =>
      parent.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))),
    );
    const pid = Number(line.trim());
    await expect.poll(() => readProcessStat(pid)?.state, { timeout: 10_000 }).toBe('Z');
    expect(await isJob(pid, readProcessStat(pid)?.startTime as string)).toBe('no\n');
  });

  it('reads the boot id and the host name as node does', async () => {
    expect(await sh('read_boot; read_host; printf "%s\\n%s\\n" "$boot" "$host"', [])).toBe(
      `${readBootId()}\n${hostname()}\n`,
    );
  });
});
