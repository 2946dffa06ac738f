/** The container flags read into a container spec, and the container's line in `status`. */
import type { JobRecord } from '@yonder/core';
import { describe, expect, it } from 'vitest';
import { containerFromOptions, containerLine } from './container-options.js';

describe('containerFromOptions', () => {
  it('is undefined without container flags, null for --no-container', () => {
    expect(containerFromOptions({})).toBeUndefined();
    expect(containerFromOptions({ 'no-container': true })).toBeNull();
  });

  it('reads every flag, binds and variables as given, GPUs as a boolean or a device', () => {
    expect(
      containerFromOptions({
        'container-runtime': 'apptainer',
        'container-image': '/images/p.sif',
        bind: ['/a b:/in', "/it's:/out:rw"],
        'container-gpus': 'true',
        'container-env': ['A=1=2', 'B='],
      }),
    ).toEqual({
      runtime: 'apptainer',
      image: '/images/p.sif',
      binds: ['/a b:/in', "/it's:/out:rw"],
      gpus: true,
      env: { A: '1=2', B: '' },
    });
    expect(containerFromOptions({ 'container-gpus': 'false' })).toEqual({ gpus: false });
    expect(containerFromOptions({ 'container-gpus': 'nvidia.com/gpu=1' })).toEqual({
      gpus: 'nvidia.com/gpu=1',
    });
  });

  it('refuses --no-container beside another container flag, and a bad --container-env', () => {
    expect(() => containerFromOptions({ 'no-container': true, bind: ['/a:/b'] })).toThrow(
      '--no-container cannot be combined',
    );
    expect(() => containerFromOptions({ 'container-env': ['novalue'] })).toThrow(
      '--container-env takes KEY=VALUE',
    );
  });
});

describe('containerLine', () => {
  const job = (extra: Partial<JobRecord>) =>
    ({ spec: { container: null }, ...extra }) as unknown as JobRecord;

  it('names the runtime, the image, the id the target gave and the binds', () => {
    expect(
      containerLine(
        job({
          spec: {
            container: {
              runtime: 'podman',
              image: 'localhost/p',
              binds: ['/d:/d:ro'],
              gpus: false,
              env: {},
            },
          } as never,
          containerImage: { id: 'sha256:1', digest: 'sha256:2' },
        }),
      ),
    ).toBe('podman localhost/p (sha256:1, digest sha256:2); binds /d:/d:ro');
    expect(containerLine(job({}))).toBeUndefined();
  });
});
