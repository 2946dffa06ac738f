/** The CLI's own hints beside the libraries' error messages, which name no command of the CLI. */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError, YonderError } from '@yonder/core';
import { REPOSITORY_ROOT } from '@yonder/test-helpers';
import { afterAll, describe, expect, it } from 'vitest';
import { errorText, issueText } from './error-text.js';
import { main } from './main.js';
import type { Io } from './output.js';

describe('errorText', () => {
  it('names the command that creates a missing profile', () => {
    const error = new YonderError('E_NO_SUCH_PROFILE', 'No profile named "gpu". Profiles: local.', {
      data: { profile: 'gpu', profiles: ['local'] },
    });
    expect(errorText(error)).toBe(
      'No profile named "gpu". Profiles: local. Create one with: yonder profile add gpu --backend BACKEND',
    );
  });

  it('names the command that lists every job when none matches', () => {
    const error = new YonderError('E_NO_SUCH_JOB', 'No job matches "abc".', {
      data: { reference: 'abc' },
    });
    expect(errorText(error)).toBe('No job matches "abc". "yonder list --all" shows every job.');
  });

  it('names the command that opens the login a host needs a person for', () => {
    const error = new YonderError('E_LOGIN_REQUIRED', 'Logging in to hpc needs more.', {
      data: { profile: 'hpc', host: 'hpc' },
    });
    expect(errorText(error)).toBe(
      'Logging in to hpc needs more. Run "yonder connect hpc" first (ssh asks there), then try again.',
    );
  });

  it('adds nothing to an error without the data its hint needs', () => {
    expect(errorText(new YonderError('E_NO_SUCH_PROFILE', 'No profile named "x".'))).toBe(
      'No profile named "x".',
    );
    expect(errorText(new YonderError('E_TRANSPORT', 'down'))).toBe('down');
  });

  it('names the flag that sets each profile field with an issue', () => {
    const error = new ValidationError('E_INVALID_PROFILE', 'Profile "box" is invalid', [
      { path: 'host', message: 'the ssh backend needs a host' },
      { path: 'remoteRoot', message: 'set both localRoot and remoteRoot, or neither' },
      { path: 'options.binDir', message: 'must be an absolute path' },
    ]);
    expect(errorText(error)).toBe(
      'Profile "box" is invalid:\n' +
        '  host: the ssh backend needs a host (--host)\n' +
        '  remoteRoot: set both localRoot and remoteRoot, or neither (--remote-root)\n' +
        '  options.binDir: must be an absolute path',
    );
    expect(issueText({ path: 'workdir', message: 'must be an absolute path' })).toBe(
      'workdir: must be an absolute path (--workdir)',
    );
    expect(issueText({ path: '', message: 'a profile must be a JSON object' })).toBe(
      'a profile must be a JSON object',
    );
  });
});

describe('yonder prints the hints', () => {
  const state = mkdtempSync(join(tmpdir(), 'yonder-error-text-'));
  afterAll(() => rmSync(state, { recursive: true, force: true }));

  const run = async (...argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const io: Io = {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      color: false,
      env: { ...process.env, YONDER_STATE_DIR: state, YONDER_CONFIG: join(state, 'none.json') },
      cwd: state,
    };
    const code = await main(argv, io);
    return { code, stdout, stderr };
  };

  it('on stderr and in the --json envelope alike', async () => {
    const text = await run('submit', '--profile', 'nosuch', '--', 'true');
    expect(text.code).toBe(1);
    expect(text.stderr).toBe(
      'yonder: No profile named "nosuch". Profiles: local. Create one with: yonder profile add nosuch --backend BACKEND\n',
    );
    const json = await run('status', 'abcdef', '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      ok: false,
      error: {
        code: 'E_NO_SUCH_JOB',
        message: 'No job matches "abcdef". "yonder list --all" shows every job.',
      },
    });
  });

  it('with what the user typed escaped: no control character reaches the terminal', async () => {
    const text = await run('status', '\u001b]0;PWNED\u0007');
    expect(text.code).toBe(1);
    expect(text.stderr).toContain('"\\x1b]0;PWNED\\x07"');
    expect(text.stderr.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    const json = await run('status', '\u001b[31m', '--json');
    expect(JSON.parse(json.stdout).error.message).toContain('\u001b[31m');
  });

  it('for a profile that cannot be saved, naming the flags', async () => {
    const added = await run(
      'profile',
      'add',
      'half',
      '--backend',
      'local',
      '--remote-root',
      '/mnt',
    );
    expect(added.code).toBe(1);
    expect(added.stderr).toContain(
      'localRoot: set both localRoot and remoteRoot, or neither (--local-root)',
    );
  });
});

describe('the libraries', () => {
  /** Every source file (not a test) of core, the stores and the backends. */
  function sources(directory: string): string[] {
    return readdirSync(directory).flatMap((name) => {
      const path = join(directory, name);
      if (statSync(path).isDirectory()) return sources(path);
      return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
    });
  }
  const LIBRARIES = [
    'core',
    'store-fs',
    'store-postgres',
    'backend-ssh',
    'backend-slurm',
    'backend-command',
    'backend-gridengine',
  ];
  const ADVICE = [
    /\byonder (submit|list|status|wait|logs|cancel|profile|plugins)\b/,
    /\bnpm install\b/,
    /\(--[a-z][a-z-]*\)/,
  ];

  it('leave CLI advice (a yonder command, a flag, npm install) out of what they say', () => {
    const found: string[] = [];
    for (const library of LIBRARIES) {
      for (const file of sources(join(REPOSITORY_ROOT, 'packages', library, 'src'))) {
        readFileSync(file, 'utf8')
          .split('\n')
          .forEach((line, index) => {
            // Comments may speak of the CLI; strings may not.
            if (/^\s*(\*|\/\/|\/\*)/.test(line)) return;
            if (ADVICE.some((pattern) => pattern.test(line)))
              found.push(`${file}:${index + 1}: ${line.trim()}`);
          });
      }
    }
    expect(found).toEqual([]);
  });
});
