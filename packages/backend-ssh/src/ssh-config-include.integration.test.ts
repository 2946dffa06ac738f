import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { asUser, requireUsers } from '@yonder/test-helpers';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from './ssh-config-values.js';

// A relative Include is looked for in ~/.ssh, whatever directory the config file is in: checked
// against `ssh -G` run as the unprivileged test user, whose ~/.ssh the test may write to (never
// the real user's).

const cleanups: Array<() => void> = [];

afterAll(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

describe('Include relative to ~/.ssh', () => {
  it('resolves as ssh -G does for a -F config outside ~/.ssh', () => {
    const { victim } = requireUsers();
    const sshDir = join(victim.home, '.ssh');
    if (!existsSync(sshDir)) {
      mkdirSync(sshDir, { mode: 0o700 });
      chownSync(sshDir, victim.uid, victim.gid);
      cleanups.push(() => rmSync(sshDir, { recursive: true, force: true }));
    }
    const dir = mkdtempSync(join(sshDir, 'yonder-include-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const name = basename(dir);
    const own = (path: string, text: string): void => {
      writeFileSync(path, text, { mode: 0o600 });
      chownSync(path, victim.uid, victim.gid);
    };
    chownSync(dir, victim.uid, victim.gid);
    // The config lives in `dir`; `Include NAME/inc.conf` means ~/.ssh/NAME/inc.conf, not
    // dir/NAME/inc.conf (the decoy beside the file).
    own(join(dir, 'inc.conf'), 'Host foo\n  User included\n  Port 2345\n');
    mkdirSync(join(dir, name));
    chownSync(join(dir, name), victim.uid, victim.gid);
    own(join(dir, name, 'inc.conf'), 'Host foo\n  User beside\n  Port 2999\n');
    const config = join(dir, 'config');
    own(config, `Include ${name}/inc.conf\nHost *\n  User fallback\n`);
    const printed = asUser(victim, ['ssh', '-G', '-F', config, 'foo']);
    expect(printed).toMatch(/^user included$/m);
    expect(printed).toMatch(/^port 2345$/m);
    const ours = resolveConfig(
      { host: 'foo' },
      { configFile: config, home: victim.home, localUser: victim.name, localUid: victim.uid },
    );
    expect({ user: ours.user, port: ours.port }).toEqual({ user: 'included', port: 2345 });
  });
});
