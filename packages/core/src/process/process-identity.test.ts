import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { until } from '@yonder/test-helpers';
import { afterEach, describe, expect, it } from 'vitest';
import {
  currentProcessIdentity,
  isProcessAlive,
  parseProcStat,
  readBootId,
  readProcessIdentity,
  readProcessStat,
} from './process-identity.js';

/** A /proc/PID/stat line with 52 fields, the command name as given and field 22 = startTime. */
function statLine(pid: number, comm: string, state: string, startTime: string): string {
  const fields: string[] = [String(pid), `(${comm})`, state];
  for (let field = 4; field <= 52; field += 1)
    fields.push(field === 22 ? startTime : String(field * 10));
  return `${fields.join(' ')}\n`;
}

const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Start a process and resolve with its first line of output. */
function startWithLine(argv: string[]): Promise<{ child: ChildProcess; line: string }> {
  const [program, ...args] = argv as [string, ...string[]];
  const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let text = '';
    child.on('error', reject);
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const end = text.indexOf('\n');
      if (end >= 0) resolve({ child, line: text.slice(0, end) });
    });
  });
}

describe('parseProcStat', () => {
  it('checks that the test line is realistic: 52 fields, start time at field 22', () => {
    const line = statLine(123, 'cat', 'R', '91520');
    const fields = line.trim().split(' ');
    expect(fields).toHaveLength(52);
    expect(fields[21]).toBe('91520');
    expect(parseProcStat(line)).toEqual({ state: 'R', startTime: '91520' });
  });

  it('reads the fields after the last ") " when the command name holds spaces and ") "', () => {
    const line = statLine(123, 'a) b (c) ', 'S', '777');
    expect(line.startsWith('123 (a) b (c) ) S ')).toBe(true);
    expect(parseProcStat(line)).toEqual({ state: 'S', startTime: '777' });
  });

  it('handles a command name that looks like more fields', () => {
    expect(parseProcStat(statLine(9, ') R 1 2 3 4 5', 'Z', '42'))).toEqual({
      state: 'Z',
      startTime: '42',
    });
  });

  it.each([
    ['empty text', ''],
    ['no parentheses', '123 cat S 1 2 3'],
    ['too few fields', '123 (cat) S 1 2 3'],
    ['a non-numeric start time', statLine(1, 'x', 'S', 'abc')],
  ])('returns null for %s', (_what, text) => {
    expect(parseProcStat(text)).toBeNull();
  });

  it('agrees with this process’s real stat file', () => {
    const stat = parseProcStat(readFileSync('/proc/self/stat', 'utf8'));
    expect(stat?.startTime).toMatch(/^\d+$/);
    expect(stat?.state).toBe('R');
  });
});

describe('readProcessIdentity and isProcessAlive', () => {
  it('reads this process’s identity', () => {
    const identity = readProcessIdentity(process.pid);
    expect(identity).toEqual({
      pid: process.pid,
      startTime: expect.stringMatching(/^\d+$/),
      bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      host: hostname(),
    });
    expect(currentProcessIdentity()).toEqual(identity);
    expect(readBootId()).toBe(identity?.bootId);
  });

  it('says this process is alive', () => {
    const identity = readProcessIdentity(process.pid);
    expect(identity).not.toBeNull();
    expect(isProcessAlive(identity!)).toBe(true);
  });

  it('says a recycled pid (another start time) is not the same process', () => {
    const identity = readProcessIdentity(process.pid)!;
    expect(isProcessAlive({ ...identity, startTime: String(Number(identity.startTime) + 1) })).toBe(
      false,
    );
    expect(isProcessAlive({ ...identity, startTime: '0' })).toBe(false);
  });

  it('says a process from another boot or another host is not alive here', () => {
    const identity = readProcessIdentity(process.pid)!;
    expect(isProcessAlive({ ...identity, bootId: '00000000-0000-0000-0000-000000000000' })).toBe(
      false,
    );
    expect(isProcessAlive({ ...identity, host: `${identity.host}-elsewhere` })).toBe(false);
  });

  it('says a process that has exited is not alive, and reads no identity for it', async () => {
    const { child, line } = await startWithLine(['sh', '-c', 'echo $$; exec sleep 30']);
    const pid = Number(line);
    expect(pid).toBe(child.pid);
    const identity = readProcessIdentity(pid);
    expect(identity).not.toBeNull();
    expect(isProcessAlive(identity!)).toBe(true);
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    await until(() => readProcessStat(pid) === null, 5_000, 'the reaped process to vanish');
    expect(isProcessAlive(identity!)).toBe(false);
    expect(readProcessIdentity(pid)).toBeNull();
  });

  it('says a zombie is not alive', async () => {
    // The inner sh exits once its parent has become `sleep` (exec'd), which never reaps it;
    // exiting earlier could let the outer sh reap it before the exec.
    const { line } = await startWithLine([
      'sh',
      '-c',
      'sh -c \'while [ "$(cat /proc/$PPID/comm)" != sleep ]; do :; done\' & echo $!; exec sleep 30',
    ]);
    const pid = Number(line);
    await until(() => readProcessStat(pid)?.state === 'Z', 5_000, 'the process to be a zombie');
    const identity = readProcessIdentity(pid);
    expect(identity).not.toBeNull();
    expect(isProcessAlive(identity!)).toBe(false);
  });
});
