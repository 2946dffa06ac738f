import { assertBackend } from '@yonder/core/testing';
import { describe, expect, it } from 'vitest';
import { createSshBackend, SshOptionsSchema } from './ssh-backend.js';

describe('createSshBackend', () => {
  it('is the workstation backend on a required host, reached by the ssh transport', () => {
    const backend = createSshBackend();
    assertBackend(backend);
    expect(backend.id).toBe('ssh');
    expect(backend.capabilities).toMatchObject({
      host: 'required',
      transport: 'ssh',
      recoverSubmit: true,
      logs: true,
      submitGraceSeconds: 90,
    });
    expect(backend.targetKey({ name: 'box', backend: 'ssh', host: 'target' }, {})).toBe(
      'ssh:target',
    );
    expect(backend.validateProfile({ name: 'box', backend: 'ssh', host: 'target' })).toEqual([]);
  });

  it('takes its submit grace from the factory, and its options from its schema', () => {
    expect(createSshBackend({ submitGraceSeconds: 7 }).capabilities.submitGraceSeconds).toBe(7);
    expect(createSshBackend().optionsSchema).toBe(SshOptionsSchema);
  });

  it('refuses a port in the host of an openssh profile when it is saved (ssh2 reads it)', () => {
    const backend = createSshBackend();
    const profile = { name: 'box', backend: 'ssh', host: 'me@box:2222' };
    expect(backend.validateProfile({ ...profile, transport: 'openssh' })).toEqual([
      {
        path: 'host',
        message: expect.stringContaining(
          'names a port, which the system ssh (--transport openssh) does not read',
        ),
      },
    ]);
    expect(backend.validateProfile({ ...profile, transport: 'ssh2' })).toEqual([]);
  });
});
