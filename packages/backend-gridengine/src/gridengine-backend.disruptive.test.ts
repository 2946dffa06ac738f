/**
 * Stops and restarts the Grid Engine qmaster of scripts/gridengine-cluster.sh (stop-qmaster,
 * start-qmaster): a disruptive test, run alone (vitest project `disruptive`). Driven through
 * the backend itself: this package uses nothing of yonder's beyond the public kit.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BackendJobV1, createLocalTransport, type ObservationV1 } from '@yonder/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createGridEngineBackend } from './gridengine-backend.js';
import { GRIDENGINE_SCRIPT, requireGridEngine, workdir } from './test-support/cluster.js';

const state = mkdtempSync(join(tmpdir(), 'yonder-ge-restart-'));

function cluster(command: string): void {
  execFileSync('bash', [GRIDENGINE_SCRIPT, command], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, YONDER_GRIDENGINE_QUIET: '1' },
    timeout: 180_000,
  });
}

beforeAll(() => requireGridEngine());
afterAll(() => {
  // Whatever happened, leave the cluster up for the next test.
  cluster('start');
  rmSync(state, { recursive: true, force: true });
});

it('while the qmaster is down a poll is a failed query; after its restart the job that ended meanwhile is settled with its exit status', async () => {
  const backend = createGridEngineBackend();
  const profile = { name: 'ge', backend: 'gridengine', workdir: workdir() };
  const context = {
    transport: createLocalTransport(),
    options: {},
    stateDirectory: state,
    route: 'local',
  };
  const id = `restart${Date.now().toString(36)}`;
  const submitted = await backend.submit(
    {
      id,
      name: 'restart',
      marker: `yonder:${id}`,
      createdAt: new Date().toISOString(),
      argv: ['sh', '-c', 'sleep 6; exit 5'],
      env: {},
      secrets: {},
      resources: {},
      schedulerOptions: [],
      profile,
    },
    context,
  );
  const job: BackendJobV1 = {
    id,
    name: 'restart',
    externalId: submitted.externalId,
    state: 'pending',
    createdAt: new Date().toISOString(),
    cancelRequested: false,
    profile,
    options: {},
    data: submitted.data,
  };
  const poll = async (): Promise<ObservationV1> =>
    (await backend.poll([job], context)).get(id) as ObservationV1;
  const deadline = Date.now() + 60_000;
  while (!((await poll()) as { state?: string }).state?.startsWith('running')) {
    if (Date.now() > deadline) throw new Error('the job did not start');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  cluster('stop-qmaster');
  const down = await poll();
  expect(down).toMatchObject({ kind: 'query-failed', source: 'qstat' });
  cluster('start-qmaster');
  // The restarted qmaster may list the job as running for a while after it ended (the execd
  // reports it at its next load report): only its end counts.
  let observation: ObservationV1 = down;
  const end = Date.now() + 150_000;
  while (!(observation.kind === 'found' && ['succeeded', 'failed'].includes(observation.state))) {
    expect(observation.kind).not.toBe('absent');
    if (Date.now() > end)
      throw new Error(`the job was not settled: ${JSON.stringify(observation)}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    observation = await poll();
  }
  expect(observation).toMatchObject({ state: 'failed', exitCode: 5, failureKind: 'application' });
}, 300_000);
