/** What the CLI takes from its environment and command line as bytes and paths, through the real CLI: the state directory's variables (issue 24 item 4) and bytes that are not UTF-8 (item 6). */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, runCli } from '@yonder/test-helpers';
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
