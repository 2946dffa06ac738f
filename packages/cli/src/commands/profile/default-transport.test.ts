/** Which ssh transport a new profile gets: openssh with an OpenSSH client 8.0 or later on PATH, else ssh2. */
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultSshTransport, openSshVersion } from './default-transport.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-default-transport-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the transport a new ssh profile gets', () => {
  it('is openssh with the OpenSSH client on PATH (8.0 or later)', () => {
    const version = openSshVersion(process.env);
    expect(version).not.toBeNull();
    expect(defaultSshTransport(process.env, 'linux')).toBe(
      (version?.[0] ?? 0) >= 8 ? 'openssh' : 'ssh2',
    );
  });

  it('is ssh2 without ssh, with an OpenSSH older than 8.0, and on Windows', () => {
    const empty = join(scratch, 'empty');
    expect(defaultSshTransport({ PATH: mkdtempSync(empty) }, 'linux')).toBe('ssh2');
    const old = mkdtempSync(join(scratch, 'old'));
    writeFileSync(join(old, 'ssh'), '#!/bin/sh\necho "OpenSSH_7.4p1, OpenSSL 1.0.2k-fips" >&2\n');
    chmodSync(join(old, 'ssh'), 0o755);
    symlinkSync('/bin/sh', join(old, 'sh'));
    expect(openSshVersion({ PATH: old })).toEqual([7, 4]);
    expect(defaultSshTransport({ PATH: old }, 'linux')).toBe('ssh2');
    expect(defaultSshTransport(process.env, 'win32')).toBe('ssh2');
  });
});
