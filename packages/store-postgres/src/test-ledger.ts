/**
 * For this package's tests: a migrated database in the private cluster, and login roles that
 * authenticate with a password (members of `yonder_password`, see scripts/postgres-cluster.sh),
 * so one test process can act as several users. Everything made is dropped by `dropAll`.
 */
import { randomBytes } from 'node:crypto';
import {
  createTestDatabase,
  dropTestDatabase,
  POSTGRES_HOST,
  postgresSql,
} from '@yonder/test-helpers';
import { createPostgresStore, type PostgresStore } from './index.js';

export interface TestLedger {
  readonly name: string;
  /** The database's URL as the superuser. */
  readonly url: string;
  /** The superuser's store, migrated. */
  readonly owner: PostgresStore;
}

const databases: string[] = [];
const roles: string[] = [];
const stores: PostgresStore[] = [];

/** A new database with yonder's schema applied. */
export async function testLedger(prefix = 'yonder_store'): Promise<TestLedger> {
  const { name, url } = createTestDatabase(prefix);
  databases.push(name);
  const owner = track(createPostgresStore({ location: url, migrateEmpty: false }));
  await owner.migrate();
  return { name, url, owner };
}

/** A new, empty database (no schema), dropped by `dropAll`. */
export function emptyDatabase(prefix: string): { name: string; url: string } {
  const database = createTestDatabase(prefix);
  databases.push(database.name);
  return database;
}

/** Keep a store to close in `dropAll`. */
export function track(store: PostgresStore): PostgresStore {
  stores.push(store);
  return store;
}

/** A login role with a password, granted the ledger (and the admins' role with `admin`); its URL for `database`. */
export function passwordRole(
  database: string,
  base: string,
  options: { admin?: boolean; grant?: boolean } = {},
): { role: string; password: string; url: string } {
  const role = `${base}_${process.pid}_${roles.length}`;
  const password = randomBytes(12).toString('hex');
  postgresSql(
    'postgres',
    `CREATE ROLE "${role}" LOGIN PASSWORD '${password}' IN ROLE yonder_password`,
  );
  roles.push(role);
  if (options.grant !== false) postgresSql(database, `GRANT yonder_user TO "${role}"`);
  if (options.admin) postgresSql(database, `INSERT INTO yonder.admins VALUES ('${role}')`);
  return { role, password, url: roleUrl(database, role, password) };
}

/** The Unix-socket URL of `database` as `role`, with a password when given. */
export function roleUrl(database: string, role: string, password?: string): string {
  const auth = password === undefined ? role : `${role}:${encodeURIComponent(password)}`;
  return `postgresql://${auth}@/${database}?host=${encodeURIComponent(POSTGRES_HOST)}`;
}

/** Close every store and drop every database and role made here. */
export async function dropAll(): Promise<void> {
  await Promise.all(stores.splice(0).map((store) => store.close().catch(() => undefined)));
  for (const name of databases.splice(0)) dropTestDatabase(name);
  for (const role of roles.splice(0)) postgresSql('postgres', `DROP ROLE IF EXISTS "${role}"`);
}
