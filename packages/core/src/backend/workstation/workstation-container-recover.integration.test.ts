/** A submit of a job in a real podman container whose answer was lost: recovery finds the job and the image it runs, as the submit would have recorded them. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendContextV1 } from '../../spec/backend/v1/backend-v1.js';
import { createLocalTransport } from '../../transport/local-transport.js';
import { createLocalBackend } from '../local/local-backend.js';
import { testRequest } from './workstation-test-requests.js';

/** The image scripts/containers.sh builds for the container tests. */
const TEST_IMAGE = 'localhost/yonder-test-busybox';

let scratch: string;
let context: BackendContextV1;
const started: number[] = [];

beforeAll(() => {
  const exists = spawnSync('podman', ['image', 'exists', TEST_IMAGE], { encoding: 'utf8' });
  if (exists.error || exists.status !== 0)
    throw new Error(
      `podman with the image ${TEST_IMAGE} is needed: run scripts/containers.sh as root (${exists.error?.message ?? exists.stderr.trim()})`,
    );
  scratch = mkdtempSync(join(tmpdir(), 'yonder-container-recover-'));
  context = { transport: createLocalTransport(), options: {}, stateDirectory: scratch };
});

afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe('recovering a submit of a job in a container', () => {
  it('finds the image the submit recorded, and none for a job without a container', async () => {
    const backend = createLocalBackend({ submitGraceSeconds: 5 });
    const boxed = testRequest({
      argv: ['sleep', '30'],
      profile: { name: 'box', backend: 'local', workdir: join(scratch, 'jobs') },
      container: { runtime: 'podman', image: TEST_IMAGE, binds: [], gpus: false, env: {} },
    });
    const plain = testRequest({
      argv: ['sleep', '30'],
      profile: { name: 'plain', backend: 'local', workdir: join(scratch, 'jobs') },
    });
    const submitted = await backend.submit(boxed, context);
    const other = await backend.submit(plain, context);
    started.push(Number(submitted.externalId), Number(other.externalId));
    expect(submitted.containerImage?.id).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The answer above is what a lost connection would have lost: recovery must find it again.
    // Until its wrapper has written wrapper.pid a job is "not known yet" to a recovery (the
    // manager asks again): wait for both, as a later recovery would find them.
    for (const result of [submitted, other])
      await expect
        .poll(() => existsSync(join(String(result.data.jobDir), 'wrapper.pid')), {
          timeout: 10_000,
        })
        .toBe(true);
    const found = await backend.recover?.([boxed, plain], context);
    expect(found?.get(boxed.id)).toMatchObject({
      externalId: submitted.externalId,
      containerImage: submitted.containerImage,
    });
    expect(found?.get(plain.id)).toMatchObject({ externalId: other.externalId });
    expect(found?.get(plain.id)?.containerImage).toBeUndefined();
    await backend.cancel(
      [boxed, plain].map((request, index) => ({
        id: request.id,
        name: request.name,
        externalId: [submitted, other][index]?.externalId ?? null,
        state: 'running',
        createdAt: request.createdAt,
        cancelRequested: true,
        profile: request.profile,
        options: {},
        data: [submitted, other][index]?.data ?? {},
      })),
      context,
      { force: true },
    );
  }, 60_000);
});
