/**
 * manager.watch() on the team ledger learns of a job written by another process through
 * LISTEN/NOTIFY, long before its interval; the notification carries the id only; and a
 * dropped listening connection is opened again.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRegistry, type JobEvent, JobManager } from '@yonder/core';
import { sampleJob } from '@yonder/core/conformance';
import { postgresSql, until } from '@yonder/test-helpers';
import { afterAll, expect, it } from 'vitest';
import { createPostgresStore } from './index.js';
import { dropAll, passwordRole, type TestLedger, testLedger, track } from './test-ledger.js';

afterAll(dropAll);

/** A watch that would read the ledger only every ten minutes without notifications. */
function watchOf(url: string) {
  const store = track(createPostgresStore({ location: url }));
  const manager = new JobManager({
    store,
    registry: createRegistry({}),
    stateDirectory: mkdtempSync(join(tmpdir(), 'yonder-watch-')),
  });
  const watch = manager.watch({ intervalMs: 600_000, refresh: false });
  const events: JobEvent[] = [];
  void (async () => {
    for await (const event of watch) events.push(event);
  })();
  return { watch, events };
}

let ledger: TestLedger;

/** The pids of the server processes listening for the ledger's notifications. */
function listeners(): string[] {
  return postgresSql(
    ledger.name,
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN yonder_jobs' AND state = 'idle'`,
  )
    .split('\n')
    .filter(Boolean);
}

it('a job written elsewhere reaches the watch through NOTIFY, not the interval', async () => {
  ledger = await testLedger('yonder_watch');
  const { watch, events } = watchOf(ledger.url);
  await watch.ready;
  await until(() => listeners().length === 1, 60_000, 'the watch listening');
  const job = sampleJob({ state: 'running' });
  await ledger.owner.createJob(job);
  await until(
    () => events.some((event) => event.type === 'created' && event.job.id === job.id),
    60_000,
    'the created event',
  );
  await ledger.owner.updateJob(job.id, (current) => ({ ...current, state: 'succeeded' }));
  await until(
    () => events.some((event) => event.type === 'state-changed' && event.job.id === job.id),
    60_000,
    'the state-changed event',
  );
  // The connection dropped: opened again, and notifications come again.
  const [first] = listeners();
  postgresSql(ledger.name, `SELECT pg_terminate_backend(${first})`);
  await until(
    () => listeners().length === 1 && listeners()[0] !== first,
    60_000,
    'the watch listening again',
    100,
  );
  const later = sampleJob({ state: 'running' });
  await ledger.owner.createJob(later);
  await until(
    () => events.some((event) => event.type === 'created' && event.job.id === later.id),
    60_000,
    'the created event after the reconnection',
  );
  watch.close();
}, 300_000);

it('a notification holds the id only: another role learns nothing of a job but that it was written', async () => {
  const other = passwordRole(ledger.name, 'listener');
  const store = track(createPostgresStore({ location: other.url }));
  const heard: string[] = [];
  const stop = await store.subscribe((id) => heard.push(id));
  const job = sampleJob({ name: 'secret name', state: 'running' });
  await ledger.owner.createJob(job);
  await until(() => heard.includes(job.id), 60_000, 'the notification');
  expect(heard.every((payload) => /^[0-9a-f]+$/.test(payload))).toBe(true);
  await stop();
});
