import { describe, expect, it } from 'vitest';
import { parseSlurmOptions } from './slurm-options.js';

describe('parseSlurmOptions', () => {
  it('hands back the options of a valid profile, and none when it has none', () => {
    const options = {
      binDir: '/opt/slurm/bin',
      export: 'NONE',
      requeue: true,
      probeTtlSeconds: 60,
    };
    expect(parseSlurmOptions({ name: 'hpc', backend: 'slurm', options })).toEqual(options);
    expect(parseSlurmOptions({ name: 'hpc', backend: 'slurm' })).toEqual({});
  });

  it('refuses invalid options with every problem as a dot path', () => {
    let caught: unknown;
    try {
      parseSlurmOptions({
        name: 'hpc',
        backend: 'slurm',
        options: { binDir: 5, export: 'SOME', colour: 'red' },
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({
      code: 'E_INVALID_PROFILE',
      message: expect.stringContaining('Profile "hpc" has invalid Slurm options'),
      issues: expect.arrayContaining([
        expect.objectContaining({ path: 'options.binDir' }),
        expect.objectContaining({ path: 'options.export' }),
        expect.objectContaining({ message: expect.stringContaining('unknown field') }),
      ]),
    });
  });
});
