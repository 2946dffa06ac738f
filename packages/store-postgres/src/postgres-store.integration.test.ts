/** Connection failures named with their fix, passwords never shown, and schema versions. */
import { sampleJob } from '@yonder/core/conformance';
import { POSTGRES_HOST, postgresSql } from '@yonder/test-helpers';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, parseLedgerUrl, SCHEMA_VERSION } from './index.js';
import { dropAll, emptyDatabase, passwordRole, roleUrl, testLedger, track } from './test-ledger.js';

afterAll(dropAll);

const socket = encodeURIComponent(POSTGRES_HOST);

describe('ledger URLs', () => {
  it('takes both schemes and the Unix-socket form, and never shows a password', () => {
    for (const url of [
      `postgresql:///yonder?host=${socket}`,
      `postgres://alice:s3cr%40t@/yonder?host=${socket}`,
      'postgresql://alice:s3cr%40t@db.example:5433/yonder?sslmode=require&password=s3cr%40t',
    ]) {
      const address = parseLedgerUrl(url);
      expect(address.database).toBe('yonder');
      expect(address.location).not.toContain('s3cr');
      expect(JSON.stringify(createPostgresStore({ location: url }).location)).not.toContain('s3cr');
    }
    expect(parseLedgerUrl(`postgresql:///yonder?host=${socket}`).location).toBe(
      `postgresql:///yonder?host=${POSTGRES_HOST}`,
    );
  });

  it.each([
    ['mysql://host/db', /not a postgres:\/\/ or postgresql:\/\/ URL/],
    ['postgresql://host', /names no database/],
    ['postgresql://host/', /names no database/],
    ['postgresql://ho st/db\n', /control character/],
    ['postgresql://host/%zz', /percent-encoding/],
  ])('refuses %j, naming the field and the form', (url, reason) => {
    expect(() => parseLedgerUrl(url)).toThrow(reason);
    expect(() => parseLedgerUrl(url)).toThrow(
      /^store: .*write it as postgresql:\/\/ROLE@HOST\/DATABASE/,
    );
  });
});

describe('connection failures', () => {
  it('a wrong password is named, with where to fix it, and the password is not shown', async () => {
    const ledger = await testLedger('yonder_password');
    const { role } = passwordRole(ledger.name, 'carol');
    const store = track(
      createPostgresStore({ location: roleUrl(ledger.name, role, 'not-it-9f8e') }),
    );
    const error = await store.getJob('abcdef').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'E_STORE', data: { reason: 'password' } });
    expect(String((error as Error).message)).toMatch(/Wrong password for role .*PGPASSFILE/);
    expect(JSON.stringify(error)).not.toContain('not-it-9f8e');
  });

  it('a missing database is named, with the fix', async () => {
    const store = track(
      createPostgresStore({
        location: `postgresql://yonder@/no_such_db_${process.pid}?host=${socket}`,
      }),
    );
    await expect(store.listJobs()).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/database "no_such_db_\d+" does not exist .*createdb/),
    });
  });

  it('no server at the socket directory is named, with the fix', async () => {
    const store = track(
      createPostgresStore({ location: 'postgresql:///yonder?host=/nonexistent-dir' }),
    );
    await expect(store.listJobs()).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/No PostgreSQL server answers at .*Start the server/),
    });
  });
});

describe('schema versions', () => {
  it('an empty database is migrated on first use; concurrent migrations apply each step once', async () => {
    const { name, url } = emptyDatabase('yonder_migrate');
    const stores = Array.from({ length: 4 }, () => track(createPostgresStore({ location: url })));
    const results = await Promise.all(stores.map((store) => store.migrate()));
    expect(results.filter((result) => result.applied.length > 0)).toHaveLength(1);
    expect(postgresSql(name, 'SELECT count(*) FROM yonder.schema_versions').trim()).toBe(
      String(SCHEMA_VERSION),
    );
    await expect(stores[0]?.status()).resolves.toMatchObject({
      schemaVersion: SCHEMA_VERSION,
      readerVersion: SCHEMA_VERSION,
      jobs: 0,
    });
  });

  it('an older reader meeting a schema it cannot use refuses, naming both versions, and writes nothing', async () => {
    const ledger = await testLedger('yonder_newer');
    const next = SCHEMA_VERSION + 1;
    postgresSql(
      ledger.name,
      `INSERT INTO yonder.schema_versions (version, min_reader, description) VALUES (${next}, ${next}, 'from the future')`,
    );
    const reader = track(createPostgresStore({ location: ledger.url }));
    const error = await reader.createJob(sampleJob()).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: 'E_STORE',
      data: { schema: 'newer', schemaVersion: next, readerVersion: SCHEMA_VERSION },
    });
    expect((error as Error).message).toContain(`schema version ${next}`);
    expect((error as Error).message).toContain(`reads schema version ${SCHEMA_VERSION}`);
    await expect(reader.migrate()).rejects.toMatchObject({ data: { schema: 'newer' } });
    expect(postgresSql(ledger.name, 'SELECT count(*) FROM yonder.jobs').trim()).toBe('0');
    expect(postgresSql(ledger.name, 'SELECT max(version) FROM yonder.schema_versions').trim()).toBe(
      String(next),
    );
  });

  it('a newer schema that older readers may still use is used', async () => {
    const ledger = await testLedger('yonder_compatible');
    postgresSql(
      ledger.name,
      `INSERT INTO yonder.schema_versions (version, min_reader, description) VALUES (${SCHEMA_VERSION + 1}, ${SCHEMA_VERSION}, 'compatible')`,
    );
    const reader = track(createPostgresStore({ location: ledger.url }));
    const job = sampleJob();
    await reader.createJob(job);
    expect((await reader.getJob(job.id))?.id).toBe(job.id);
  });

  it('a database without the schema, not to be migrated on use, is refused naming both versions', async () => {
    const { url, name } = emptyDatabase('yonder_unmigrated');
    const reader = track(createPostgresStore({ location: url, migrateEmpty: false }));
    await expect(reader.listJobs()).rejects.toMatchObject({
      data: { schema: 'older', schemaVersion: 0, readerVersion: SCHEMA_VERSION },
    });
    expect(postgresSql(name, `SELECT to_regnamespace('yonder') IS NULL`).trim()).toBe('t');
  });
});

describe('export and import', () => {
  it('exports every job once, oldest first, page by page (ties in creation time included); imports keep owners, twice changes nothing', async () => {
    const source = await testLedger('yonder_export');
    const at = '2026-11-01T00:00:00.000Z';
    const jobs = [
      sampleJob({ createdAt: at }),
      sampleJob({ createdAt: at }),
      sampleJob({ createdAt: '2026-10-01T00:00:00.000Z' }),
      sampleJob(),
      sampleJob({ createdAt: at }),
    ];
    for (const job of jobs) await source.owner.createJob(job);
    await source.owner.saveJobSettings(jobs[3]?.id as string, 'kept\n');
    const exported = [];
    for await (const entry of source.owner.exportJobs(2)) exported.push(entry);
    const expected = [...jobs].sort((a, b) =>
      a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1,
    );
    expect(exported.map((entry) => entry.job.id)).toEqual(expected.map((job) => job.id));
    expect(exported.find((entry) => entry.job.id === jobs[3]?.id)?.settings).toBe('kept\n');

    const target = await testLedger('yonder_import');
    const owner = { user: 'alice', host: 'node7', role: 'someone_else' };
    const entry = { ...(exported[0] as (typeof exported)[number]), owner };
    expect(await target.owner.importJob(entry)).toBe(true);
    expect(await target.owner.importJob(entry)).toBe(false);
    expect(await target.owner.getOwner(entry.job.id)).toEqual(owner);
    expect(await target.owner.getJob(entry.job.id)).toEqual(entry.job);
  });
});
