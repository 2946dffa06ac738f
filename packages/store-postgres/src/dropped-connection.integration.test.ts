/**
 * Connections dropped in the middle of writes (the server ends every backend of the database,
 * as a restart does): each write either happened whole or failed with E_STORE, nothing is lost
 * or half-written, and the store goes on with new connections.
 */
import { sampleJob } from '@yonder/core/conformance';
import { postgresSql } from '@yonder/test-helpers';
import { afterAll, expect, it } from 'vitest';
import { createPostgresStore } from './index.js';
import { dropAll, testLedger, track } from './test-ledger.js';

afterAll(dropAll);

it('writes cut off by dropped connections are whole or refused; the store goes on', async () => {
  const ledger = await testLedger('yonder_dropped');
  const store = track(createPostgresStore({ location: ledger.url, maxConnections: 3 }));
  const job = sampleJob({ state: 'running', data: { count: 0 } });
  await store.createJob(job);
  let succeeded = 0;
  let refused = 0;
  const writers = Array.from({ length: 3 }, async () => {
    for (let n = 0; n < 40; n += 1) {
      try {
        await store.updateJob(job.id, (current) => ({
          ...current,
          data: { count: Number(current.data.count) + 1 },
        }));
        succeeded += 1;
      } catch (error) {
        expect(error).toMatchObject({ code: 'E_STORE' });
        refused += 1;
      }
    }
  });
  const cutter = (async () => {
    for (let n = 0; n < 5; n += 1) {
      postgresSql(
        ledger.name,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  await Promise.all([...writers, cutter]);
  expect(succeeded + refused).toBe(120);
  // Whatever was cut off, the store goes on: a read and a write with new connections.
  let final = await store.getJob(job.id).catch(() => undefined);
  final ??= await store.getJob(job.id);
  // Every write that said it succeeded is there; one cut off after its commit may be too.
  const count = Number(final?.data.count);
  expect(count).toBeGreaterThanOrEqual(succeeded);
  expect(count).toBeLessThanOrEqual(120);
  // Record, revision and history agree: nothing half-written.
  expect(final?.revision).toBe(count);
  const events = postgresSql(
    ledger.name,
    `SELECT count(*) FROM yonder.job_events WHERE job_id = '${job.id}'`,
  ).trim();
  expect(Number(events)).toBe(count + 1);
  await store.updateJob(job.id, (current) => ({ ...current, state: 'succeeded' }));
  expect((await store.getJob(job.id))?.state).toBe('succeeded');
}, 300_000);
