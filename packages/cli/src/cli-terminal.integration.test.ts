/** The CLI on a real terminal (a tmux pane), as people see it: `list --watch` on a terminal shorter than its table (issue 24 item 12) and `wait`'s results and progress (item 15). */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_BIN, cliEnv, requireCliBuild, runCli, until } from '@yonder/test-helpers';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let state: string;
let work: string;
let socket: string;

beforeAll(() => {
  requireCliBuild();
  try {
    execFileSync('tmux', ['-V'], { stdio: 'pipe' });
  } catch {
    throw new Error('tmux is missing: apt-get install -y tmux');
  }
});
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'yonder-tty-'));
  work = mkdtempSync(join(tmpdir(), 'yonder tty work '));
  socket = join(state, 'tmux.socket');
});
afterEach(() => {
  try {
    execFileSync('tmux', ['-S', socket, 'kill-server'], { stdio: 'pipe' });
  } catch {
    // Already gone.
  }
  rmSync(state, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

const tmux = (args: string[]): string =>
  execFileSync('tmux', ['-S', socket, ...args], {
    encoding: 'utf8',
    env: cliEnv(state, { TERM: 'xterm' }),
  });

/** `yonder ARGS` in a fresh pane of `columns` x `rows`; `EXIT=<status>` is written after it ends. */
function startInPane(args: string[], columns: number, rows: number): void {
  const command = [process.execPath, CLI_BIN, ...args].map(quote).join(' ');
  tmux([
    'new-session',
    '-d',
    '-x',
    String(columns),
    '-y',
    String(rows),
    '-s',
    'main',
    '-c',
    work,
    `${command}; echo "EXIT=$?"; exec sleep 3600`,
  ]);
}

/** Everything the pane holds, its scrollback included. */
const pane = (): string => tmux(['capture-pane', '-p', '-J', '-S', '-', '-t', 'main']);

const yonder = (args: string[]) => runCli(args, { state, cwd: work });

/** A job that runs until `gate` exists, then exits with `code`. */
async function gated(gate: string, code = 0, name = 'gated'): Promise<string> {
  const submitted = await yonder([
    'submit',
    '--name',
    name,
    '--',
    'sh',
    '-c',
    `while [ ! -e "$1" ]; do sleep 0.2; done; exit ${code}`,
    'sh',
    gate,
  ]);
  expect(submitted.code, submitted.stderr).toBe(0);
  return submitted.stdout.trim();
}

describe('list --watch on a terminal', () => {
  it('a terminal shorter than the table: nothing stacked in the scrollback, the header and the newest jobs in view, no status line left', async () => {
    const gate = join(work, 'go');
    const ids: string[] = [];
    for (let index = 0; index < 12; index += 1) ids.push(await gated(gate, 0, `job-${index}`));
    startInPane(['list', '--watch'], 80, 10);
    await until(() => pane().includes('more not shown'), 60_000, 'the watch to draw', 200);
    // Every job ends: a redraw for each (twelve state changes).
    writeFileSync(gate, '');
    await until(() => pane().includes('EXIT='), 120_000, 'the watch to end', 200);
    const text = pane();
    expect(text).toContain('EXIT=0');
    const lines = text.split('\n');
    // One header in the whole history: no copy of the table was pushed into the scrollback.
    expect(
      lines.filter((line) => line.startsWith('ID ')),
      text,
    ).toHaveLength(1);
    for (const id of ids)
      expect(lines.filter((line) => line.startsWith(id)).length, text).toBeLessThanOrEqual(1);
    // Newest first, as list shows them: the newest job is right under the header.
    const header = lines.findIndex((line) => line.startsWith('ID '));
    expect(lines[header + 1], text).toMatch(new RegExp(`^${ids.at(-1)} .*succeeded`));
    expect(text).toContain('more not shown (the terminal is too short)');
    expect(text).not.toContain('Watching');
    expect(text).not.toContain('watching');
  }, 180_000);

  it('honours --limit, --since, -q and --format, and Ctrl-C ends it with 130', async () => {
    const gate = join(work, 'go');
    const old = await gated(gate, 0, 'old');
    const a = await gated(gate, 0, 'a');
    const b = await gated(gate, 0, 'b');
    const c = await gated(gate, 0, 'c');
    startInPane(['list', '--watch', '--limit', '2', '--format', '{name}={state}'], 80, 10);
    await until(() => pane().includes('c=running'), 60_000, 'the watch to draw', 200);
    expect(pane()).toMatch(/^c=running\nb=running\nWatching; Ctrl-C to stop\.$/m);
    tmux(['send-keys', '-t', 'main', 'C-c']);
    await until(() => pane().includes('EXIT='), 60_000, 'the watch to end', 200);
    let text = pane();
    expect(text).toContain('EXIT=130');
    expect(text).not.toContain('Watching');
    expect(text).not.toContain('a=');
    tmux(['kill-server']);
    // -q: the ids only; --since: only jobs created since then (none of the four).
    startInPane(['list', '--watch', '-q', '--limit', '3'], 80, 10);
    await until(() => pane().includes(c), 60_000, 'the watch to draw', 200);
    tmux(['send-keys', '-t', 'main', 'C-c']);
    await until(() => pane().includes('EXIT='), 60_000, 'the watch to end', 200);
    text = pane();
    expect(text.split('\n').slice(0, 3)).toEqual([c, b, a]);
    expect(text).not.toContain(old);
    tmux(['kill-server']);
    const since = new Date(Date.now() + 60_000).toISOString();
    const none = await yonder(['list', '--watch', '--since', since]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('');
    writeFileSync(gate, '');
    for (const id of [old, a, b, c])
      expect((await yonder(['wait', id, '--timeout', '120'])).code).toBe(0);
  }, 240_000);
});

describe('wait on a terminal', () => {
  it('shows a progress line while waiting, then each result once; Ctrl-C ends it with 130', async () => {
    const gate = join(work, 'go');
    const id = await gated(gate, 3);
    startInPane(['wait', id], 100, 20);
    await until(() => pane().includes('waiting for 1 of 1 job'), 60_000, 'the progress line', 200);
    writeFileSync(gate, '');
    await until(() => pane().includes('EXIT='), 120_000, 'wait to end', 200);
    const text = pane();
    expect(text).toContain('EXIT=3');
    const results = text.split('\n').filter((line) => line.includes(id));
    expect(results, text).toEqual([`${id} failed exit 3`]);
    expect(text).not.toContain('waiting for');
    tmux(['kill-server']);
    // Ctrl-C: 130, as logs -f and list --watch; the state so far is printed.
    const other = await gated(join(work, 'never'));
    startInPane(['wait', other], 100, 20);
    await until(() => pane().includes('waiting for 1 of 1 job'), 60_000, 'the progress line', 200);
    tmux(['send-keys', '-t', 'main', 'C-c']);
    await until(() => pane().includes('EXIT='), 60_000, 'wait to end', 200);
    expect(pane()).toContain('EXIT=130');
    expect(pane()).toContain(`${other} running`);
    await yonder(['cancel', other]);
  }, 240_000);
});
