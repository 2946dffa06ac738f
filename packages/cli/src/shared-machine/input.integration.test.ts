/**
 * Issue 11, hostile input: `--settings` and `--secrets-file` must be regular files under a
 * stated size (never a FIFO or /dev/zero), JSON nested past 64 levels and `__proto__`,
 * `constructor` or `prototype` keys are refused by field, and a bad secrets-file line is named
 * by its number, never by its content.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, writeFileSync } from 'node:fs';
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
let home: string;
let env: Record<string, string>;

beforeAll(() => {
  ({ victim, cli } = usersWithCli());
  home = ownedDir(victim, 'input');
  env = { YONDER_STATE_DIR: join(home, 'state') };
});
afterAll(() => cleanupUsers());

function victimFile(name: string, content: string | Buffer): string {
  const path = join(home, name);
  writeFileSync(path, content, { mode: 0o600 });
  chownSync(path, victim.uid, victim.gid);
  return path;
}

async function yonder(args: string[], timeoutMs = 20_000): Promise<CliResult> {
  return runAs(victim, cli.bin, args, { env, timeoutMs });
}

/** A usage error (exit 2) quickly, with no crash and the message wanted. */
function expectRefused(result: CliResult, message: RegExp | string): void {
  expect(result.signal, result.stderr).toBeNull();
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).not.toMatch(/RangeError|TypeError|E_INTERNAL|Maximum call stack/);
  if (typeof message === 'string') expect(result.stderr).toContain(message);
  else expect(result.stderr).toMatch(message);
}

describe('--settings', () => {
  it('/dev/zero is refused as a device, at once', async () => {
    const started = Date.now();
    expectRefused(await yonder(['submit', '--settings', '/dev/zero', '--', 'true']), 'is a device');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a FIFO is refused without hanging', async () => {
    const fifo = join(home, 'settings.fifo');
    execFileSync('runuser', ['-u', victim.name, '--', 'mkfifo', fifo]);
    expectRefused(await yonder(['submit', '--settings', fifo, '--', 'true']), 'is a FIFO');
  });

  it('a file over 1 MiB is refused, naming the limit', async () => {
    const big = victimFile('big.json', `{"a":"${'x'.repeat(1024 * 1024)}"}`);
    expectRefused(await yonder(['submit', '--settings', big, '--', 'true']), 'larger than 1 MiB');
  });

  it('JSON nested 100,000 deep is refused by field, with no stack overflow', async () => {
    const deep = victimFile('deep.json', `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    expectRefused(
      await yonder(['submit', '--settings', deep, '--', 'true']),
      /settings\.a\.0\.0.*nests deeper than 64 levels/,
    );
  });

  it.each(['__proto__', 'constructor', 'prototype'])(
    'a "%s" key is refused, naming the field',
    async (key) => {
      const file = victimFile(`proto-${key}.json`, `{"model":{"${key}":{"polluted":true}}}`);
      expectRefused(
        await yonder(['submit', '--settings', file, '--', 'true']),
        `settings.model.${key}: "${key}" is a reserved name`,
      );
    },
  );

  it('an ordinary settings file still works', async () => {
    const file = victimFile('ok.json', '{"lr": 0.1, "layers": [1, 2, {"deep": true}]}');
    const result = await yonder([
      'submit',
      '--json',
      '--settings',
      file,
      '--',
      'cat',
      '{settings}',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const id = jsonOf(result).result.id;
    expect((await yonder(['wait', id])).code).toBe(0);
    expect(JSON.parse((await yonder(['logs', id])).stdout)).toEqual({
      lr: 0.1,
      layers: [1, 2, { deep: true }],
    });
  });
});

describe('KEY=VALUE input', () => {
  it.each(['__proto__', 'constructor', 'prototype'])(
    '--env %s=… is refused, naming it',
    async (key) => {
      expectRefused(await yonder(['submit', '--env', `${key}=1`, '--', 'true']), `--env ${key}`);
    },
  );

  it('--set __proto__.polluted=1 is refused before anything is set or saved', async () => {
    const result = await yonder([
      'profile',
      'add',
      'p',
      '--backend',
      'local',
      '--set',
      '__proto__.polluted=1',
    ]);
    expectRefused(result, '"__proto__" is a reserved name');
    const listed = jsonOf(await yonder(['profile', 'list', '--json'])).result;
    expect(listed.map((profile: { name: string }) => profile.name)).toEqual(['local']);
  });

  it('--secret __proto__ is refused', async () => {
    expectRefused(
      await yonder(['submit', '--secret', '__proto__', '--', 'true']),
      '--secret __proto__',
    );
  });
});

describe('--secrets-file', () => {
  const secret = 'hunter2-do-not-print';

  it('a malformed line is named by its number, never by its content', async () => {
    const file = victimFile('secrets.env', `TOKEN=ok\n${secret}\n`);
    const result = await yonder(['submit', '--secrets-file', file, '--', 'true']);
    expectRefused(result, `line 2 of ${file}`);
    expect(result.stderr + result.stdout).not.toContain('hunter2');
  });

  it('a line with a bad name is named by number only, never by the name (it may be the secret)', async () => {
    const file = victimFile('secrets-name.env', `${secret} x=1\n`);
    const result = await yonder(['submit', '--secrets-file', file, '--', 'true']);
    expectRefused(result, 'line 1 of');
    expect(result.stderr + result.stdout).not.toContain('hunter2');
  });

  it('a reserved name is refused by line', async () => {
    const file = victimFile('secrets-proto.env', `A=1\n__proto__=${secret}\n`);
    const result = await yonder(['submit', '--secrets-file', file, '--', 'true']);
    expectRefused(result, 'line 2 of');
    expect(result.stderr).not.toContain('hunter2');
  });

  it('/dev/zero, a FIFO and a file over 64 KiB are refused', async () => {
    expectRefused(
      await yonder(['submit', '--secrets-file', '/dev/zero', '--', 'true']),
      'is a device',
    );
    const fifo = join(home, 'secrets.fifo');
    execFileSync('runuser', ['-u', victim.name, '--', 'mkfifo', fifo]);
    expectRefused(await yonder(['submit', '--secrets-file', fifo, '--', 'true']), 'is a FIFO');
    const big = victimFile('big.env', `A=${'x'.repeat(70 * 1024)}\n`);
    expectRefused(
      await yonder(['submit', '--secrets-file', big, '--', 'true']),
      'larger than 64 KiB',
    );
  });

  it('a good file still passes its secrets to the job', async () => {
    const file = victimFile('good.env', '# a comment\nTOKEN=s3cr3t value\n\n');
    const result = await yonder([
      'submit',
      '--json',
      '--secrets-file',
      file,
      '--',
      'sh',
      '-c',
      'printf "%s" "$TOKEN"',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const id = jsonOf(result).result.id;
    expect((await yonder(['wait', id])).code).toBe(0);
    expect((await yonder(['logs', id])).stdout).toBe('s3cr3t value');
  });
});
