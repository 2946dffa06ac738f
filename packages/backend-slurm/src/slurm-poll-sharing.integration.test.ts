/** Issue 12, stale status: a job created while another process's poll of the same target is in flight is polled by the next refresh, never skipped because of that shared poll. Two processes, the real cluster, a squeue shim that holds the first poll. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRegistry, JobManager, type StoreV1 } from '@yonder/core';
import { shQuote } from '@yonder/core/backend-kit';
import { createFsStore } from '@yonder/store-fs';
import { requireCliBuild, runCli, until } from '@yonder/test-helpers';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSlurmBackend } from './slurm-backend.js';
import { requireCluster } from './test-support/cluster.js';
import { heldJob, releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';

beforeAll(() => {
  requireCluster();
  requireCliBuild();
});
const cleanups: Array<() => void> = [];
afterEach(() => {
  releaseHeldJobs();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A store that says when its caller starts waiting for a lease another process holds. */
function watchedStore(inner: StoreV1, onWait: () => void): StoreV1 {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'waitForLease')
        return (key: string, timeoutMs: number) => {
          onWait();
          return target.waitForLease(key, timeoutMs);
        };
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('poll sharing between processes', () => {
  it('a job submitted while another process’s poll is in flight is polled by the next status', async () => {
    const { manager, shims, state } = await shimmedSlurm();
    const { job: a } = await heldJob(manager);
    // The other process's poll: `yonder status a`, held inside its squeue until released.
    const gate = mkdtempSync(join(tmpdir(), 'yonder-squeue-gate-'));
    const blocked = join(gate, 'blocked');
    const go = join(gate, 'go');
    shims.behave(
      'squeue',
      `: > ${shQuote(blocked)}; while [ ! -e ${shQuote(go)} ]; do sleep 0.1; done; exec "$real" "$@"`,
    );
    const other = runCli(['status', a.id, '--format', '{state}'], { state, timeoutMs: 180_000 });
    await until(() => existsSync(blocked), 60_000, 'the other process polls');
    const squeueBefore = shims.calls('squeue').length;

    // Meanwhile this process submits b, held (so what squeue says of it is known: pending,
    // JobHeldUser, whatever else the shared node is running).
    const b = await manager.submit(
      { argv: ['true'], schedulerOptions: ['--hold'] },
      { profile: 'hpc' },
    );
    cleanups.push(() => execFileSync('scancel', [b.externalId as string]));
    expect(b).toMatchObject({ state: 'pending', reason: null });

    // `status b` from a manager that says when it is waiting for the other process's poll;
    // that poll is released only then, so it completes after this status began asking.
    const waiting = { seen: false };
    const asker = new JobManager({
      store: watchedStore(createFsStore({ location: state }), () => {
        waiting.seen = true;
        writeFileSync(go, '');
      }),
      registry: createRegistry({ backends: [createSlurmBackend()] }),
      stateDirectory: state,
      minPollIntervalMs: 0,
    });
    const [seen] = await asker.status([b.id]);
    expect(waiting.seen).toBe(true);
    const otherResult = await other;
    expect(otherResult.code, otherResult.stderr).toBe(0);
    expect(otherResult.stdout.trim()).toMatch(/^(pending|running)$/);
    // The shared poll listed its jobs before b existed: b was polled again, by this process.
    expect(seen).toMatchObject({ state: 'pending', reason: 'JobHeldUser', nativeState: 'PENDING' });
    expect(shims.calls('squeue').length).toBe(squeueBefore + 1);
  }, 240_000);
});
