/** Jobs in real podman containers on the local backend, through the built CLI, as root and as the unprivileged victim (rootless podman): what runs inside, binds, secrets, cancel, refusals. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupUsers, lookUp, until } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ContainerUser,
  IMAGE_MARKER,
  imageId,
  podmanAs,
  processesHolding,
  requirePodman,
  rootUser,
  runningContainers,
  TEST_IMAGE,
  victimUser,
} from './container-test-kit.js';

const IN_CONTAINER = ['--container-runtime', 'podman', '--container-image', TEST_IMAGE];
/** A directory name sh, podman and apptainer would each misread if anything parsed it. */
const HOSTILE_NAME = `in $(touch pwned) 'q' "dq" ☃ -rf`;

afterAll(cleanupUsers);

describe.each([
  ['root', rootUser],
  ['the victim (rootless podman)', victimUser],
])('podman on the local backend, as %s', (_label, make) => {
  let user: ContainerUser;
  let uid: string;
  beforeAll(() => {
    requirePodman();
    user = make();
    uid = user.name === null ? '0' : String(lookUp(user.name)?.uid);
  });

  it('runs the command inside: the image, read-only and read-write binds, settings, env and secrets', async () => {
    const input = user.dir(HOSTILE_NAME);
    writeFileSync(join(input, 'input'), 'input-data\n', { mode: 0o644 });
    const out = user.dir('out');
    const settings = join(user.dir('settings'), 'settings.json');
    writeFileSync(settings, JSON.stringify({ greeting: 'hi' }), { mode: 0o644 });
    const secret = `tok $(id) "q" ☃ ${user.label}`;
    const submitted = await user.yonder(
      [
        'submit',
        ...IN_CONTAINER,
        '--bind',
        `${input}:/in`,
        '--bind',
        `${out}:/out:rw`,
        '--settings',
        settings,
        '--env',
        'MODE=a b',
        '--secret',
        'TOKEN',
        '--',
        'sh',
        '-c',
        'cat /etc/yonder-image /in/input "$1"; printf "%s|%s\\n" "$MODE" "$TOKEN"; echo carried > /out/result; if touch /in/new 2>/dev/null; then echo in-writable; else echo in-read-only; fi; id -u; pwd',
        'sh',
        '{settings}',
      ],
      { TOKEN: secret },
    );
    expect(submitted.stderr).toBe('');
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    const waited = await user.yonder(['wait', id]);
    expect(waited.code).toBe(0);
    const log = (await user.yonder(['logs', id])).stdout;
    const status = await user.yonderJson(['status', id]);
    const jobDir = String(status.doc.result[0].data.jobDir);
    expect(log.split('\n')).toEqual([
      IMAGE_MARKER,
      'input-data',
      '{',
      '  "greeting": "hi"',
      '}',
      `a b|${secret}`,
      'in-read-only',
      uid,
      jobDir,
      '',
    ]);
    expect(readFileSync(join(out, 'result'), 'utf8')).toBe('carried\n');
    expect(existsSync(join(input, 'new'))).toBe(false);
    expect(existsSync(join(input, 'pwned'))).toBe(false);
    expect(status.doc.result[0].containerImage.id).toBe(imageId(user.name));
    expect(status.doc.result[0].spec.container).toEqual({
      runtime: 'podman',
      image: TEST_IMAGE,
      binds: [`${input}:/in:ro`, `${out}:/out:rw`],
      gpus: false,
      env: {},
    });
    expect(JSON.stringify(status.doc)).not.toContain('tok $(id)');
    const text = (await user.yonder(['status', id])).stdout;
    expect(text).toContain(`Container:    podman ${TEST_IMAGE} (${imageId(user.name)}`);
  });

  it('resubmit runs the job again in the same container, and asks for a secret the way resubmit takes it', async () => {
    const input = user.dir('resubmit-in');
    writeFileSync(join(input, 'input'), 'again-data\n', { mode: 0o644 });
    const submitted = await user.yonder(
      [
        'submit',
        ...IN_CONTAINER,
        '--bind',
        `${input}:/in`,
        '--secret',
        'TOKEN',
        '--',
        'sh',
        '-c',
        'cat /etc/yonder-image /in/input; echo "$TOKEN"',
      ],
      { TOKEN: 'first' },
    );
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    expect((await user.yonder(['wait', id])).code).toBe(0);
    // Without the secret: refused, naming how resubmit takes it (never an option it refuses).
    const refused = await user.yonder(['resubmit', id]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('set $TOKEN in the environment of yonder resubmit');
    expect(refused.stderr).not.toContain('--secret');
    const again = await user.yonder(['resubmit', id], { TOKEN: 'second' });
    expect(again.code, again.stderr).toBe(0);
    const second = again.stdout.trim();
    expect((await user.yonder(['wait', second])).code).toBe(0);
    expect((await user.yonder(['logs', second])).stdout).toBe(
      `${IMAGE_MARKER}\nagain-data\nsecond\n`,
    );
    const [old, fresh] = (await user.yonderJson(['status', id, second])).doc.result;
    expect(fresh.spec.container).toEqual(old.spec.container);
    expect(fresh.spec.container).toMatchObject({ runtime: 'podman', image: TEST_IMAGE });
  });

  it('never puts a secret in any command line, nor in the environment of podman, conmon or the pause process', async () => {
    const out = user.dir('out-secret');
    const secret = `never-in-argv-${Math.random().toString(36).slice(2)}`;
    const submitted = await user.yonder(
      [
        'submit',
        ...IN_CONTAINER,
        '--bind',
        `${out}:/out:rw`,
        '--secret',
        'TOKEN',
        '--',
        'sh',
        '-c',
        'echo ready > /out/ready; while [ ! -e /out/go ]; do sleep 0.1; done; echo "$TOKEN"',
      ],
      { TOKEN: secret },
    );
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    let holding: ReturnType<typeof processesHolding>;
    try {
      await until(
        () => existsSync(join(out, 'ready')),
        60_000,
        'the job to start in its container',
      );
      holding = processesHolding(secret);
    } finally {
      writeFileSync(join(out, 'go'), '');
    }
    expect(holding.cmdline).toEqual([]);
    const runtimes = holding.environ.filter((entry) =>
      /^\d+: (\S*\/)?(podman|conmon|catatonit)( |$)/.test(entry),
    );
    expect(runtimes).toEqual([]);
    expect((await user.yonder(['wait', id])).code).toBe(0);
    expect((await user.yonder(['logs', id])).stdout).toBe(`${secret}\n`);
  });

  it('cancel stops the container: nothing of it is left running, and podman adds nothing to its log', async () => {
    // Three times: podman's complaint about signalling a container that had just stopped
    // came in about two cancels of three.
    for (const round of [1, 2, 3]) {
      const out = user.dir(`out-cancel-${round}`);
      const submitted = await user.yonder([
        'submit',
        ...IN_CONTAINER,
        '--bind',
        `${out}:/out:rw`,
        '--',
        'sh',
        '-c',
        'echo ready > /out/ready; echo started; exec sleep 300',
      ]);
      expect(submitted.code).toBe(0);
      const id = submitted.stdout.trim();
      await until(
        () => existsSync(join(out, 'ready')),
        60_000,
        'the job to start in its container',
      );
      expect(runningContainers(user.name, id)).toHaveLength(1);
      const cancelled = await user.yonderJson(['cancel', id]);
      expect(cancelled.code).toBe(0);
      const status = await user.yonderJson(['status', id]);
      expect(status.doc.result[0].state).toBe('cancelled');
      expect(runningContainers(user.name, id)).toEqual([]);
      const jobLog = readFileSync(String(status.doc.result[0].data.log), 'utf8');
      expect(jobLog, `round ${round}`).toBe('started\n');
    }
  });

  it('a command the image does not have exits 127 saying so, as docker; one it cannot run, 126', async () => {
    const missing = 'no such-cmd;$(touch pwned)';
    const submitted = await user.yonder(['submit', ...IN_CONTAINER, '--', missing, '-x']);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    expect((await user.yonder(['wait', id])).code).toBe(127);
    const status = (await user.yonderJson(['status', id])).doc.result[0];
    expect(status).toMatchObject({ state: 'failed', exitCode: 127 });
    const log = (await user.yonder(['logs', id])).stdout;
    expect(log).toContain(
      `yonder: ${missing}: no such command in the container image (not a file there, nor on its PATH)`,
    );
    const notRunnable = await user.yonder(['submit', ...IN_CONTAINER, '--', '/etc/yonder-image']);
    const other = notRunnable.stdout.trim();
    expect((await user.yonder(['wait', other])).code).toBe(126);
    expect((await user.yonder(['logs', other])).stdout).toContain(
      'yonder: /etc/yonder-image: cannot be run in the container image (not executable there)',
    );
  });

  it('reports the exit status of the command inside, and a forced cancel stops a container that ignores TERM', async () => {
    const failed = await user.yonder(['submit', ...IN_CONTAINER, '--', 'sh', '-c', 'exit 3']);
    const failedId = failed.stdout.trim();
    expect((await user.yonder(['wait', failedId])).code).toBe(3);
    expect((await user.yonderJson(['status', failedId])).doc.result[0]).toMatchObject({
      state: 'failed',
      exitCode: 3,
      failureKind: 'application',
    });
    const profile = await user.yonder([
      'profile',
      'add',
      'stubborn',
      '--backend',
      'local',
      '--cancel-grace',
      '1',
      ...IN_CONTAINER,
    ]);
    expect(profile.code, profile.stderr).toBe(0);
    const out = user.dir('out-stubborn');
    const submitted = await user.yonder([
      'submit',
      '--profile',
      'stubborn',
      '--bind',
      `${out}:/out:rw`,
      '--',
      'sh',
      '-c',
      'trap "" TERM; echo ready > /out/ready; while :; do sleep 1; done',
    ]);
    const id = submitted.stdout.trim();
    await until(() => existsSync(join(out, 'ready')), 60_000, 'the job to start in its container');
    const cancelled = await user.yonderJson(['cancel', id]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect((await user.yonderJson(['status', id])).doc.result[0].state).toBe('cancelled');
    await until(
      () => runningContainers(user.name, id).length === 0,
      60_000,
      'podman to remove the container its killed processes left',
    );
  });

  it.each([
    [
      'a bind source that does not exist',
      ['--bind', '/nonexistent/yonder-data:/in'],
      'container.binds.0: the source /nonexistent/yonder-data does not exist on the target',
    ],
    [
      'an image the target does not have',
      ['--container-image', 'localhost/yonder-no-such-image'],
      'container.image: podman has no image localhost/yonder-no-such-image on the target',
    ],
    [
      'a bind over /proc',
      ['--bind', '/tmp:/proc/sys'],
      'container.binds.0: the destination /proc/sys is under /proc',
    ],
    [
      'a path with a colon',
      ['--bind', '/tmp/a:b:/in'],
      'container.binds.0: must be SRC:DST, SRC:DST:ro or SRC:DST:rw',
    ],
    [
      'a line break in a path',
      ['--bind', '/tmp/a\nb:/in'],
      'container.binds.0: may not contain a newline or a NUL character',
    ],
    [
      'a relative source',
      ['--bind', 'data:/in'],
      'container.binds.0: the source "data" must be an absolute path',
    ],
  ])('refuses %s by field, and starts nothing', async (_what, flags, message) => {
    const before = allContainers(user);
    const result = await user.yonder(['submit', ...IN_CONTAINER, ...flags, '--', 'true']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
    expect(allContainers(user)).toEqual(before);
  });

  it('runs from a work directory whose path has spaces, quotes, $() and unicode', async () => {
    const workdir = join(user.dir(`work $(touch pwned) 'q' ☃`), 'jobs -rf');
    const added = await user.yonder([
      'profile',
      'add',
      'odd',
      '--backend',
      'local',
      '--workdir',
      workdir,
      ...IN_CONTAINER,
    ]);
    expect(added.code, added.stderr).toBe(0);
    const submitted = await user.yonder([
      'submit',
      '--profile',
      'odd',
      '--',
      'sh',
      '-c',
      'pwd; echo kept > "$YONDER_JOB_DIR/kept"',
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    expect((await user.yonder(['wait', id])).code).toBe(0);
    expect((await user.yonder(['logs', id])).stdout).toBe(`${workdir}/${id}\n`);
    expect(readFileSync(join(workdir, id, 'kept'), 'utf8')).toBe('kept\n');
  });

  it('profile check finds the profile’s image on the target, or says which field is wrong', async () => {
    const good = await user.yonder([
      'profile',
      'add',
      'checked',
      '--backend',
      'local',
      ...IN_CONTAINER,
    ]);
    expect(good.code, good.stderr).toBe(0);
    const checked = await user.yonder(['profile', 'check', 'checked']);
    expect(checked.code, checked.stdout).toBe(0);
    expect(checked.stdout).toContain(`Found:     containerImage = "${imageId(user.name)}"`);
    const bad = await user.yonder([
      'profile',
      'add',
      'unchecked',
      '--backend',
      'local',
      '--container-runtime',
      'podman',
      '--container-image',
      'localhost/yonder-not-here',
    ]);
    expect(bad.code, bad.stderr).toBe(0);
    const failed = await user.yonder(['profile', 'check', 'unchecked']);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain(
      'Problem:   container.image: podman has no image localhost/yonder-not-here on the target',
    );
  });

  it('refuses a bind from inside its own work directory, where yonder binds the job itself', async () => {
    const result = await user.yonder([
      'submit',
      ...IN_CONTAINER,
      '--bind',
      `${user.state}/runs:/jobs`,
      '--',
      'true',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('container.binds.0: the source');
    expect(result.stderr).toContain("is inside yonder's work directory");
  });
});

/** The user's containers, running or not: a refused submit makes none. */
function allContainers(user: ContainerUser): string[] {
  return podmanAs(user.name, ['ps', '--all', '--quiet']).split('\n').filter(Boolean);
}
