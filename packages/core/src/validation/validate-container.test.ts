/** A job's container checked before anything runs: binds with hostile paths, images per runtime, a profile's defaults under a job's own, and where binds may point on the target. */
import { describe, expect, it } from 'vitest';
import type { ResolvedContainer } from '../spec/container.js';
import {
  containerPlacementIssues,
  containerSecretIssues,
  parseBind,
  resolveContainer,
  validateContainerFields,
} from './validate-container.js';
import { validateJobSpec } from './validate-job-spec.js';

const messages = (issues: ReturnType<typeof validateContainerFields>) =>
  issues.map((issue) => `${issue.path}: ${issue.message}`);

describe('parseBind', () => {
  it('takes SRC:DST with ro by default, or an explicit mode, normalised', () => {
    expect(parseBind('/data/in:/in', 'b')).toEqual({
      source: '/data/in',
      destination: '/in',
      mode: 'ro',
    });
    expect(parseBind('/data//out/:/out:rw', 'b')).toEqual({
      source: '/data/out',
      destination: '/out',
      mode: 'rw',
    });
  });

  it('keeps spaces, quotes, $(), unicode and a leading - inside a path as they are', () => {
    const source = '/data/a b/it\'s "q"/$(id)/`id`/-rf/ünï ☃/\t';
    expect(parseBind(`${source}:/in`, 'b')).toEqual({ source, destination: '/in', mode: 'ro' });
  });

  it.each([
    ['relative source', 'data:/in', 'the source "data" must be an absolute path'],
    ['relative destination', '/data:in', 'the destination "in" must be an absolute path'],
    ['a colon inside a path', '/a:b:/in:ro', 'must be SRC:DST'],
    ['a comma inside a path', '/a,b:/in', 'may not contain ":" or ","'],
    ['a bad mode', '/data:/in:rx', 'the mode "rx" must be ro or rw'],
    ['a newline', '/da\nta:/in', 'may not contain a newline'],
    ['a NUL', '/da\0ta:/in', 'may not contain a newline or a NUL'],
    ['..', '/data/../etc:/in', 'may not contain "." or ".." parts'],
    ['/proc', '/data:/proc', 'is under /proc'],
    ['under /sys', '/data:/sys/kernel', 'is under /sys'],
    ['/dev reached through ..', '/data:/x/../dev/sda', 'may not contain "." or ".."'],
    ['under /dev, doubled slashes', '/data://dev//shm', 'is under /dev'],
    ['the root', '/data:/', 'may not be "/"'],
    ['no destination', '/data', 'must be SRC:DST'],
    ['a leading - as the whole source', '-v:/in', 'must be an absolute path'],
  ])('refuses %s, naming the field and the fix', (_what, bind, message) => {
    const issues = parseBind(bind, 'container.binds.0');
    expect(Array.isArray(issues)).toBe(true);
    expect(messages(issues as never).join('\n')).toContain(message);
    for (const issue of issues as { path: string }[]) expect(issue.path).toBe('container.binds.0');
  });

  it('does not take /procx for /proc', () => {
    expect(parseBind('/data:/procx', 'b')).toMatchObject({ destination: '/procx' });
  });
});

describe('validateContainerFields', () => {
  it('names unknown fields, runtimes and bad GPUs', () => {
    expect(
      messages(
        validateContainerFields(
          { runtime: 'docker', image: 'x', gpus: 'all; rm', mounts: [] },
          'container',
        ),
      ),
    ).toEqual([
      'container.mounts: is not a container field; known: runtime, image, binds, gpus, env',
      'container.runtime: must be one of apptainer, podman',
      'container.gpus: must be true, false, or a CDI device for podman such as nvidia.com/gpu=0',
    ]);
  });

  it('checks the image for its runtime: an absolute .sif path, or a local reference', () => {
    expect(
      messages(validateContainerFields({ runtime: 'apptainer', image: 'p.sif' }, 'c')),
    ).toEqual(['c.image: the image "p.sif" must be an absolute path (starting with "/")']);
    expect(
      messages(validateContainerFields({ runtime: 'podman', image: '--privileged' }, 'c'))[0],
    ).toContain('is not a local image reference');
    expect(validateContainerFields({ runtime: 'podman', image: 'localhost/p:1.0' }, 'c')).toEqual(
      [],
    );
  });

  it('is part of the job spec', () => {
    expect(
      validateJobSpec({ argv: ['x'], container: { binds: ['/a:/proc/1'], env: { '1x': 'y' } } }),
    ).toEqual([
      {
        path: 'container.binds.0',
        message:
          'the destination /proc/1 is under /proc, which the runtime provides itself; choose another destination',
      },
      {
        path: 'container.env.1x',
        message: 'is not a valid variable name (letters, digits, "_"; not starting with a digit)',
      },
    ]);
  });
});

describe('resolveContainer', () => {
  const profile = {
    runtime: 'podman' as const,
    image: 'localhost/base',
    binds: ['/ref:/ref'],
    env: { A: 'profile', B: 'profile' },
  };

  it('lays the job’s fields over the profile’s; binds follow, env merges', () => {
    expect(
      resolveContainer(
        { image: 'localhost/mine', binds: ['/d:/d:rw'], env: { B: 'job' } },
        profile,
      ),
    ).toEqual({
      container: {
        runtime: 'podman',
        image: 'localhost/mine',
        binds: ['/ref:/ref:ro', '/d:/d:rw'],
        gpus: false,
        env: { A: 'profile', B: 'job' },
      },
      issues: [],
    });
  });

  it('mounts a bind both give once: a resubmitted job carries the profile’s binds it had', () => {
    const first = resolveContainer({ binds: ['/d:/d:rw'] }, profile).container;
    expect(first?.binds).toEqual(['/ref:/ref:ro', '/d:/d:rw']);
    const again = resolveContainer({ ...first, binds: [...(first?.binds ?? [])] }, profile);
    expect(again.container).toEqual(first);
  });

  it('uses the profile’s container for a job that says nothing, and none for null', () => {
    expect(resolveContainer(undefined, profile).container?.image).toBe('localhost/base');
    expect(resolveContainer(null, profile)).toEqual({ container: null, issues: [] });
    expect(resolveContainer(undefined, { runtime: 'podman' })).toEqual({
      container: null,
      issues: [],
    });
  });

  it('says what is missing and where to give it', () => {
    expect(resolveContainer({ binds: ['/a:/a'] }, undefined).issues).toEqual([
      {
        path: 'container.image',
        message:
          'is required to run in a container (--container-image, or the profile’s container.image)',
      },
      {
        path: 'container.runtime',
        message:
          'is required: apptainer or podman (--container-runtime, or the profile’s container.runtime)',
      },
    ]);
    expect(resolveContainer({ image: 'rel.sif' }, { runtime: 'apptainer' }).issues[0]?.path).toBe(
      'container.image',
    );
    expect(
      resolveContainer({ image: '/p.sif', gpus: 'nvidia.com/gpu=0' }, { runtime: 'apptainer' })
        .issues[0]?.path,
    ).toBe('container.gpus');
  });
});

describe('on the target', () => {
  const container: ResolvedContainer = {
    runtime: 'podman',
    image: 'localhost/p',
    binds: ['/home/u/.yonder/jobs/other:/other:ro', '/data:/home/u/.yonder/jobs/j1/x:ro', '/d:/d'],
    gpus: false,
    env: {},
  };

  it('refuses binds from inside the work directory and binds that hide the job directory', () => {
    expect(
      containerPlacementIssues(container, {
        workdir: '/home/u/.yonder/jobs',
        jobDir: '/home/u/.yonder/jobs/j1',
      }).map((issue) => issue.path),
    ).toEqual(['container.binds.0', 'container.binds.1']);
  });

  it('refuses a job directory a runtime cannot bind', () => {
    expect(
      containerPlacementIssues({ ...container, binds: [] }, { workdir: '/w:x', jobDir: '/w:x/j1' }),
    ).toEqual([expect.objectContaining({ path: 'workdir' })]);
  });

  it('refuses podman secrets with line breaks, by name, and takes them for apptainer', () => {
    expect(containerSecretIssues(container, { PEM: 'a\nb', OK: 'x y' })).toEqual([
      expect.objectContaining({ path: 'secrets.PEM' }),
    ]);
    expect(containerSecretIssues({ ...container, runtime: 'apptainer' }, { PEM: 'a\nb' })).toEqual(
      [],
    );
  });

  it('refuses what podman’s --env-file cannot carry in the variables too, naming env.NAME or container.env.NAME', () => {
    // 65535 bytes as NAME=value is the longest line podman 4.3 reads; one more is refused.
    const longest = 'x'.repeat(65_535 - 'BIG='.length);
    const issues = containerSecretIssues(
      { ...container, env: { CR: 'a\rb', FINE: longest.slice(1) } },
      { OK: 'y' },
      { MULTI: 'one\ntwo', BIG: longest, BIGGER: 'x'.repeat(65_536 - 'BIGGER='.length) },
    );
    expect(issues.map((issue) => issue.path)).toEqual([
      'env.MULTI',
      'env.BIGGER',
      'container.env.CR',
    ]);
    expect(issues[1]?.message).toContain('is 65536 bytes as NAME=value, more than the 65535');
    expect(
      containerSecretIssues({ ...container, runtime: 'apptainer' }, {}, { MULTI: 'a\nb' }),
    ).toEqual([]);
  });
});
