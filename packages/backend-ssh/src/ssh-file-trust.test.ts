/** The files ssh2 reads are trusted as OpenSSH trusts them: a config or known_hosts others can write is refused, a private key others can read is not used. */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { utils } from 'ssh2';
import { afterAll, describe, expect, it } from 'vitest';
import { loadKnownHosts } from './known-hosts.js';
import { readIdentities } from './ssh-authentication.js';
import { resolveHost } from './ssh-config.js';
import { checkSshFile } from './ssh-file-trust.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-ssh-trust-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function file(name: string, text: string, mode: number): string {
  const path = join(scratch, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

describe('ssh files others could change', () => {
  it('a config file others can write is refused, naming it and the fix; 0600 and 0644 are read', () => {
    const open = file('config-open', 'Host box\n  HostName 127.0.0.1\n', 0o666);
    expect(() => resolveHost('box', { configFiles: [open] })).toThrow(
      expect.objectContaining({
        code: 'E_UNTRUSTED_PATH',
        message: expect.stringContaining(`Fix: chmod go-w ${open}`),
      }),
    );
    for (const mode of [0o600, 0o644]) {
      const fine = file(`config-${mode.toString(8)}`, 'Host box\n  HostName 127.0.0.9\n', mode);
      expect(resolveHost('box', { configFiles: [fine] }).hostname).toBe('127.0.0.9');
    }
  });

  it('an Included file in a directory others can write is refused', () => {
    const shared = join(scratch, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const included = join(shared, 'more.conf');
    writeFileSync(included, 'Host box\n  User someone\n', { mode: 0o600 });
    const main = file('config-include', `Include ${included}\n`, 0o600);
    expect(() => resolveHost('box', { configFiles: [main] })).toThrow(
      expect.objectContaining({ code: 'E_UNTRUSTED_PATH' }),
    );
  });

  it('a known_hosts file others can write is refused', () => {
    const knownHosts = file('known_hosts', '', 0o646);
    expect(() => loadKnownHosts([knownHosts])).toThrow(
      expect.objectContaining({
        code: 'E_UNTRUSTED_PATH',
        message: expect.stringContaining('the known hosts file'),
      }),
    );
  });

  it('a private key others may read is not used, and the problem says chmod 600', () => {
    const { private: key } = utils.generateKeyPairSync('ed25519');
    const loose = file('id_loose', key, 0o644);
    const tight = file('id_tight', key, 0o600);
    const host = {
      ...resolveHost('box', { configFiles: [join(scratch, 'none')] }),
      identityFiles: [loose, tight],
      identityFilesExplicit: true,
      identityAgent: null,
    };
    const identities = readIdentities(host);
    expect(identities.keys).toHaveLength(1);
    expect(identities.problems.join('\n')).toContain(`Fix: chmod 600 ${loose}`);
  });
});

describe('ssh files that are not regular files, or missing where others could make them', () => {
  // Found in review: a FIFO another user kept writing a ProxyCommand into was read as the
  // profile's ssh config (ssh -F), since only regular files were checked.
  it('a FIFO and a link to one are refused; /dev/null is read as nothing', () => {
    const fifo = join(scratch, 'config-fifo');
    execFileSync('mkfifo', [fifo]);
    const link = join(scratch, 'config-link-to-fifo');
    symlinkSync(fifo, link);
    for (const path of [fifo, link])
      expect(() => checkSshFile(path, 'the ssh config')).toThrow(
        expect.objectContaining({ code: 'E_UNTRUSTED_PATH' }),
      );
    expect(() => checkSshFile('/dev/null', 'the known hosts file')).not.toThrow();
  });

  it('a missing file is read as missing only where no one else could make it', () => {
    expect(() => checkSshFile(join(scratch, 'not-yet'), 'the ssh config')).not.toThrow();
    const shared = join(scratch, 'shared-open');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expect(() => checkSshFile(join(shared, 'not-yet'), 'the ssh config')).toThrow(
      expect.objectContaining({ code: 'E_UNTRUSTED_PATH' }),
    );
  });
});
