/** What the CLI takes from its environment and command line as bytes and paths, through the real CLI: the state directory's variables (issue 24 item 4) and bytes that are not UTF-8 (item 6). */

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLI_BIN,
  cliEnv,
  collectProcess,
  INVALID_UTF8,
  requireCliBuild,
  runCli,
} from '@yonder/test-helpers';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let state: string;
let work: string;

beforeAll(() => requireCliBuild());
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'yonder-env-'));
  work = mkdtempSync(join(tmpdir(), 'yonder env work '));
});
afterEach(() => {
  rmSync(state, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe('the state directory from the environment', () => {
  it('a relative YONDER_STATE_DIR or XDG_STATE_HOME is refused, naming the variable; no ledger appears in the working directory', async () => {
    for (const env of [
      { YONDER_STATE_DIR: 'ledger' } as Record<string, string>,
      { YONDER_STATE_DIR: './ledger' },
      { YONDER_STATE_DIR: '', XDG_STATE_HOME: 'state' },
    ]) {
      const variable = Object.keys(env).find((key) => env[key] !== '') as string;
      for (const args of [['list'], ['submit', '--', 'true']]) {
        const result = await runCli(args, { state, cwd: work, env });
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toContain(`${variable} is a relative path`);
        expect(result.stderr).toContain('absolute path');
      }
      expect(readdirSync(work)).toEqual([]);
    }
  }, 60_000);

  it('a YONDER_STATE_DIR or XDG_STATE_HOME holding a line break is refused, naming the variable', async () => {
    for (const env of [
      { YONDER_STATE_DIR: join(state, 'a\nb') } as Record<string, string>,
      { YONDER_STATE_DIR: join(state, 'a\rb') },
      { YONDER_STATE_DIR: '', XDG_STATE_HOME: join(state, 'x\ny') },
    ]) {
      const variable = env.YONDER_STATE_DIR ? 'YONDER_STATE_DIR' : 'XDG_STATE_HOME';
      const result = await runCli(['submit', '--', 'true'], { state, cwd: work, env });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain(`${variable} holds a line break`);
      expect(result.stdout).toBe('');
    }
    expect(readdirSync(state)).toEqual([]);
    expect(existsSync(join(work, 'a'))).toBe(false);
  }, 60_000);

  it('an absolute XDG_STATE_HOME still holds the ledger in its yonder directory', async () => {
    const result = await runCli(['submit', '--', 'true'], {
      state,
      cwd: work,
      env: { YONDER_STATE_DIR: '', XDG_STATE_HOME: join(state, 'xdg') },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(state, 'xdg', 'yonder'))).toBe(true);
  }, 60_000);
});

/**
 * `yonder` run by sh, whose `script` builds the bytes (Node's own arguments are text): "$Y" is
 * the CLI (node and the built script).
 */
function bytesThroughShell(script: string, input?: Buffer) {
  const child = spawn('sh', ['-c', `Y="$0 $1"; ${script}`, process.execPath, CLI_BIN], {
    cwd: work,
    env: cliEnv(state),
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) child.stdin?.end(input);
  return collectProcess(child);
}

describe('bytes that are not UTF-8', () => {
  it('in an argument, a --cwd, an --env value or an inherited variable: refused naming it, nothing submitted', async () => {
    const cases: Array<{ script: string; code: number; says: string }> = [
      {
        script: `$Y submit -- printf %s "$(printf 'A\\377B')"`,
        code: 2,
        says: "argument 3 of the job's command is not valid UTF-8 (bytes 41ff42)",
      },
      {
        script: `$Y submit --cwd "$(printf '/tmp/\\377')" -- true`,
        code: 2,
        says: 'the value of --cwd is not valid UTF-8',
      },
      {
        script: `$Y submit --env "X=$(printf 'A\\377B')" -- true`,
        code: 2,
        says: 'the value of --env is not valid UTF-8',
      },
      {
        script: `BAD="$(printf 'A\\377B')" $Y submit -- true`,
        code: 1,
        says: 'the environment variable "BAD" is not valid UTF-8',
      },
    ];
    for (const { script, code, says } of cases) {
      const result = await bytesThroughShell(script);
      expect(result.code, `${script}\n${result.stderr}`).toBe(code);
      expect(result.stderr).toContain(says);
      expect(result.stderr).not.toContain('\uFFFD');
    }
    // Every kind of sequence that is not UTF-8, as the job's argument.
    for (const bytes of INVALID_UTF8) {
      const octal = [...bytes].map((byte) => `\\${byte.toString(8).padStart(3, '0')}`).join('');
      const result = await bytesThroughShell(`$Y submit -- printf %s "$(printf 'A${octal}B')"`);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`(bytes 41${bytes.toString('hex')}42)`);
    }
    const none = await runCli(['list', '--all', '-q'], { state, cwd: work });
    expect(none.stdout).toBe('');
  }, 120_000);

  it('in a --settings file or a batch: refused naming it; UTF-8 beyond ASCII reaches the job byte for byte', async () => {
    const settings = join(work, 'settings.json');
    writeFileSync(settings, Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]));
    const refused = await runCli(['submit', '--settings', settings, '--', 'true'], {
      state,
      cwd: work,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is not valid UTF-8 text');
    const batch = await bytesThroughShell(
      '$Y submit --batch -',
      Buffer.concat([
        Buffer.from('{"argv":["printf","%s","A'),
        Buffer.from([0xff]),
        Buffer.from('"]}\n'),
      ]),
    );
    expect(batch.code).toBe(2);
    expect(batch.stderr).toContain('the batch on stdin is not valid UTF-8 text');
    expect((await runCli(['list', '--all', '-q'], { state, cwd: work })).stdout).toBe('');
    const ok = await bytesThroughShell(`$Y submit -- printf %s "$(printf 'A\\342\\202\\254B')"`);
    expect(ok.code, ok.stderr).toBe(0);
    const id = ok.stdout.trim();
    expect((await runCli(['wait', id, '--timeout', '60'], { state, cwd: work })).code).toBe(0);
    const log = spawn(process.execPath, [CLI_BIN, 'logs', id], { env: cliEnv(state) });
    const chunks: Buffer[] = [];
    log.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    await collectProcess(log);
    expect(Buffer.concat(chunks).toString('hex')).toBe('41e282ac42');
  }, 120_000);
});
