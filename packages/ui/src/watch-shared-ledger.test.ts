/** watchJobs over a ledger on disk shared by two managers (as two yonder processes share it): the other one's submits and the job's own progress arrive as events. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createLocalBackend,
  createLocalTransport,
  createRegistry,
  type JobEvent,
  JobManager,
} from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { until } from '@yonder/test-helpers';
import { afterEach, describe, expect, it } from 'vitest';

const made: Array<{ manager: JobManager; state: string }> = [];

function managerOn(state: string): JobManager {
  const manager = new JobManager({
    store: createFsStore({ location: state }),
    registry: createRegistry({
      backends: [createLocalBackend()],
      transports: { local: () => createLocalTransport() },
    }),
    stateDirectory: state,
  });
  made.push({ manager, state });
  return manager;
}

afterEach(async () => {
  for (const { manager } of made.splice(0)) await manager.close();
});

describe('watchJobs on a shared file ledger', () => {
  it("reports another manager's submit, the job's states and its log growing", async () => {
    const state = mkdtempSync(join(tmpdir(), 'yonder-watch-'));
    try {
      const watcher = managerOn(state);
      const other = managerOn(state);
      const watch = watcher.watch({ intervalMs: 50, logSizes: true });
      await watch.ready;
      const events: JobEvent[] = [];
      void (async () => {
        for await (const event of watch) events.push(event);
      })();
      const job = await other.submit({
        argv: ['sh', '-c', 'echo one; sleep 1; echo two; sleep 1; exit 3'],
      });
      await until(
        () => events.some((e) => e.type === 'created' && e.job.id === job.id),
        10_000,
        'the other manager’s job reported as created',
      );
      await until(
        () => events.some((e) => e.type === 'state-changed' && e.job.state === 'failed'),
        20_000,
        'the job’s end reported',
      );
      const states = events.flatMap((e) =>
        e.type === 'state-changed' && e.job.id === job.id ? [e.job.state] : [],
      );
      expect(states.at(-1)).toBe('failed');
      const ended = events.find((e) => e.type === 'state-changed' && e.job.state === 'failed');
      expect(ended).toMatchObject({ job: { exitCode: 3, failureKind: 'application' } });
      // The watcher refreshed the job itself (nobody else polled it) and saw its log grow.
      expect(events.some((e) => e.type === 'log-grew' && e.job.id === job.id)).toBe(true);
      watch.close();
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
