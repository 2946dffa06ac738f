import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, requireCliBuild, runCli, runCliJson } from './run-cli.js';

let state = '';

beforeAll(() => {
  requireCliBuild();
  state = mkdtempSync(join(tmpdir(), 'yonder-run-cli-'));
});

afterAll(() => rmSync(state, { recursive: true, force: true }));

describe('the CLI runner', () => {
  it('isolates each run from the user: own ledger, no config, agent, profile or colour', () => {
    const saved = { ...process.env };
    process.env.YONDER_CONFIG = '/home/someone/config.json';
    process.env.YONDER_DEBUG = '1';
    try {
      const env = cliEnv('/s', { EXTRA: 'x', YONDER_CONFIG: '/mine.json' });
      expect(env).toMatchObject({
        YONDER_STATE_DIR: '/s',
        YONDER_PROFILE: '',
        NO_COLOR: '1',
        SSH_AUTH_SOCK: '',
        XDG_CONFIG_HOME: '/s/.no-config',
        EXTRA: 'x',
        YONDER_CONFIG: '/mine.json',
      });
      expect(cliEnv('/s')).not.toHaveProperty('YONDER_CONFIG');
      expect(cliEnv('/s')).not.toHaveProperty('YONDER_DEBUG');
    } finally {
      process.env = saved;
    }
  });

  it('runs the built CLI, and parses its one JSON line', async () => {
    const version = await runCli(['--version'], { state });
    expect(version).toMatchObject({ code: 0, signal: null, stderr: '' });
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    const list = await runCliJson(['list', '--all', '--no-refresh'], { state });
    expect(list.doc).toEqual({ ok: true, result: [] });
    await expect(runCliJson(['--help'], { state })).rejects.toThrow(/printed no single JSON line/);
  });

  it('kills a run that outlives its timeout', async () => {
    const id = (await runCli(['submit', '--', 'sleep', '60'], { state })).stdout.trim();
    try {
      const wait = await runCli(['wait', id], { state, timeoutMs: 500 });
      expect(wait).toMatchObject({ code: null, signal: 'SIGKILL' });
    } finally {
      expect((await runCli(['cancel', id], { state })).code).toBe(0);
    }
  });
});
