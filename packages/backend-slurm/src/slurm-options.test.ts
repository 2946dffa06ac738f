import { createRegistry, JobManager } from '@yonder/core';
import { parseOptions } from '@yonder/core/backend-kit';
import { createMemoryStore } from '@yonder/core/testing';
import { describe, expect, it } from 'vitest';
import { createSlurmBackend } from './slurm-backend.js';
import { SlurmOptionsSchema } from './slurm-options.js';

const parse = (options: unknown) =>
  parseOptions({ schema: SlurmOptionsSchema, options, path: 'options', subject: 'Slurm options' });

describe('the Slurm options', () => {
  it('are handed back as they are when they fit the schema, and none when there are none', () => {
    const options = {
      binDir: '/opt/slurm/bin',
      export: 'NONE',
      requeue: true,
      probeTtlSeconds: 60,
    };
    expect(parse(options)).toEqual(options);
    expect(parse({})).toEqual({});
  });

  it('that do not fit are refused with every problem as a dot path', () => {
    expect(() => parse({ binDir: 5, export: 'SOME', colour: 'red' })).toThrowError(
      expect.objectContaining({
        code: 'E_INVALID_PROFILE',
        issues: expect.arrayContaining([
          expect.objectContaining({ path: 'options.binDir' }),
          expect.objectContaining({ path: 'options.export' }),
          expect.objectContaining({ message: expect.stringContaining('unknown field') }),
        ]),
      }),
    );
  });

  it('of a stored profile that does not fit are refused by the manager before Slurm is asked', async () => {
    const store = createMemoryStore();
    // Stored by hand (or by an older version): saving it through the manager would refuse it.
    await store.saveProfile({
      name: 'hpc',
      backend: 'slurm',
      options: { binDir: 5, export: 'SOME', colour: 'red' },
    });
    const manager = new JobManager({
      store,
      registry: createRegistry({
        backends: [createSlurmBackend()],
        transports: {
          local: () => {
            throw new Error('no transport may be made for an invalid profile');
          },
        },
      }),
      stateDirectory: '/nonexistent',
    });
    await expect(manager.submit({ argv: ['true'] }, { profile: 'hpc' })).rejects.toMatchObject({
      code: 'E_INVALID_PROFILE',
      message: expect.stringContaining('Profile "hpc" has invalid options for the slurm backend'),
      issues: expect.arrayContaining([
        expect.objectContaining({ path: 'options.binDir' }),
        expect.objectContaining({ path: 'options.export' }),
        expect.objectContaining({ message: expect.stringContaining('unknown field') }),
      ]),
    });
    expect((await store.listJobs({})).jobs).toEqual([]);
    await manager.close();
  });
});
