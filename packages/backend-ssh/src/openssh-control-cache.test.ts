/** The openssh transport's kept control settings against the real `ssh -G`: asked once, asked again when a file ssh read changes, when an Include finds a new file, after the time limit, and never kept when a `Match exec` decided. */
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { userControlSettings } from './openssh-control-cache.js';

const scratch = mkdtempSync('/tmp/ycc-');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// ssh behind a script that counts its runs, so a test sees whether ssh was asked.
const runs = join(scratch, 'runs');
const program = join(scratch, 'counting-ssh');
writeFileSync(program, `#!/bin/sh\necho "$*" >> '${runs}'\nexec ssh "$@"\n`);
chmodSync(program, 0o755);
const ssh = { program, env: { ...process.env } };
const asked = (): number => readFileSync(runs, 'utf8').split('\n').filter(Boolean).length;

let directory: string;
let cache: string;
beforeEach(() => {
  writeFileSync(runs, '');
  directory = mkdtempSync(join(scratch, 'c'));
  // Beside the sockets in real use, never in a directory ssh reads its config from.
  cache = join(mkdtempSync(join(scratch, 'k')), 'settings.json');
});

function config(text: string): string[] {
  const file = join(directory, 'config');
  writeFileSync(file, text);
  return ['-F', file];
}

describe('the user’s control settings, kept between processes', () => {
  it('asks ssh once, then answers from the kept entry with the same settings', async () => {
    const args = config('Host box\n  ControlPersist 1h\n');
    const first = await userControlSettings(ssh, args, 'box', cache);
    expect(first.get('controlpersist')).toEqual(['3600']);
    expect(first.get('controlmaster')).toEqual(['false']);
    expect(first.has('user')).toBe(false);
    const second = await userControlSettings(ssh, args, 'box', cache);
    expect(second).toEqual(first);
    expect(asked()).toBe(1);
    // Another host of the same config is another question.
    await userControlSettings(ssh, args, 'other', cache);
    expect(asked()).toBe(2);
  });

  it('asks again when the config file changes, and sees the new ControlPath', async () => {
    const args = config('Host box\n  HostName 127.0.0.1\n');
    expect((await userControlSettings(ssh, args, 'box', cache)).has('controlpath')).toBe(false);
    config('Host box\n  HostName 127.0.0.1\n  ControlPath /tmp/cm-%C\n');
    expect((await userControlSettings(ssh, args, 'box', cache)).get('controlpath')?.[0]).toMatch(
      /^\/tmp\/cm-[0-9a-f]+$/,
    );
    expect(asked()).toBe(2);
  });

  it('asks again when an Include that matched nothing finds a file, or an included file changes', async () => {
    const included = join(directory, 'conf.d');
    mkdirSync(included);
    const args = config(`Include ${included}/*.conf\nHost box\n  HostName 127.0.0.1\n`);
    expect((await userControlSettings(ssh, args, 'box', cache)).get('controlmaster')).toEqual([
      'false',
    ]);
    writeFileSync(join(included, 'mux.conf'), 'Host box\n  ControlMaster auto\n');
    expect((await userControlSettings(ssh, args, 'box', cache)).get('controlmaster')).toEqual([
      'auto',
    ]);
    await userControlSettings(ssh, args, 'box', cache);
    expect(asked()).toBe(2);
    writeFileSync(join(included, 'mux.conf'), 'Host box\n  ControlMaster no\n');
    expect((await userControlSettings(ssh, args, 'box', cache)).get('controlmaster')).toEqual([
      'false',
    ]);
    expect(asked()).toBe(3);
  });

  it('never keeps an answer a Match exec decided', async () => {
    const flag = join(directory, 'flag');
    const args = config(
      `Match host box exec "test -e ${flag}"\n  ControlPath /tmp/cm-%C\nHost box\n  HostName 127.0.0.1\n`,
    );
    expect((await userControlSettings(ssh, args, 'box', cache)).has('controlpath')).toBe(false);
    writeFileSync(flag, '');
    expect((await userControlSettings(ssh, args, 'box', cache)).has('controlpath')).toBe(true);
    expect(asked()).toBe(2);
  });

  it('asks again once the entry is older than the time limit, or from the future', async () => {
    const args = config('Host box\n  HostName 127.0.0.1\n');
    await userControlSettings(ssh, args, 'box', cache, 0);
    await userControlSettings(ssh, args, 'box', cache, 0);
    expect(asked()).toBe(2);
    const entry = JSON.parse(readFileSync(cache, 'utf8')) as { at: number };
    writeFileSync(cache, JSON.stringify({ ...entry, at: Date.now() + 3_600_000 }), { mode: 0o600 });
    await userControlSettings(ssh, args, 'box', cache);
    expect(asked()).toBe(3);
  });

  it('ignores an entry that is not its own: another ssh or home, garbage, a link', async () => {
    const args = config('Host box\n  HostName 127.0.0.1\n');
    await userControlSettings(ssh, args, 'box', cache);
    await userControlSettings({ ...ssh, env: { ...ssh.env, HOME: directory } }, args, 'box', cache);
    expect(asked()).toBe(2);
    writeFileSync(cache, '{"at": 1, "key": ', { mode: 0o600 });
    expect((await userControlSettings(ssh, args, 'box', cache)).get('controlpersist')).toEqual([
      'no',
    ]);
    const planted = join(scratch, 'planted.json');
    writeFileSync(planted, readFileSync(cache));
    rmSync(cache);
    symlinkSync(planted, cache);
    await userControlSettings(ssh, args, 'box', cache);
    expect(asked()).toBe(4);
  });

  it('a config ssh cannot read is ssh’s error, named, and nothing is kept', async () => {
    await expect(
      userControlSettings(ssh, ['-F', join(directory, 'absent')], 'box', cache),
    ).rejects.toThrow(/ssh could not read its config for box: .*absent/);
    expect(() => readFileSync(cache)).toThrow(/ENOENT/);
  });
});
