/** Applying the migrations under an advisory lock, and reading which schema a database has. */
import { YonderError } from '@yonder/core';
import type { ClientBase } from 'pg';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';

/** The advisory lock every migration of a yonder ledger takes (an arbitrary, fixed number). */
const MIGRATION_LOCK = 0x79_6f_6e_64;

/** What a database holds: the newest migration applied and the oldest reader it allows. */
export interface SchemaState {
  readonly version: number;
  readonly minReader: number;
}

/** The schema a database has, or undefined when it has none of yonder's yet. */
export async function readSchema(client: ClientBase): Promise<SchemaState | undefined> {
  const exists = await client.query<{ present: boolean }>(
    `SELECT to_regclass('yonder.schema_versions') IS NOT NULL AS present`,
  );
  if (!exists.rows[0]?.present) return undefined;
  const result = await client.query<{ version: number | null; min_reader: number | null }>(
    'SELECT max(version) AS version, max(min_reader) AS min_reader FROM yonder.schema_versions',
  );
  const row = result.rows[0];
  if (!row || row.version === null) return undefined;
  return { version: Number(row.version), minReader: Number(row.min_reader) };
}

/**
 * The error of a reader that cannot use the schema it met: names both versions. `data.schema`
 * says which side is behind (`older`: the database needs migrating; `newer`: yonder needs
 * upgrading), so a front end can add the command.
 */
export function schemaError(location: string, state: SchemaState): YonderError {
  if (state.version < SCHEMA_VERSION)
    return new YonderError(
      'E_STORE',
      `The ledger at ${location} has schema version ${state.version}; this yonder needs version ${SCHEMA_VERSION}. Nothing was written.`,
      { data: { schema: 'older', schemaVersion: state.version, readerVersion: SCHEMA_VERSION } },
    );
  return new YonderError(
    'E_STORE',
    `The ledger at ${location} has schema version ${state.version}, which readers of version ${state.minReader} or later use; this yonder reads schema version ${SCHEMA_VERSION}. Nothing was written.`,
    { data: { schema: 'newer', schemaVersion: state.version, readerVersion: SCHEMA_VERSION } },
  );
}

/** Whether this yonder can use a schema. */
export function usable(state: SchemaState): boolean {
  return state.version >= SCHEMA_VERSION && state.minReader <= SCHEMA_VERSION;
}

export interface MigrationResult {
  /** The version before (0: none). */
  readonly from: number;
  readonly to: number;
  readonly applied: readonly number[];
}

/**
 * Bring the database's schema up to this package's, in one transaction under an advisory
 * lock (two migrations at once apply each step once). Refuses, writing nothing, a schema
 * newer than this reader can use.
 */
export async function migrate(client: ClientBase, location: string): Promise<MigrationResult> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE SCHEMA IF NOT EXISTS yonder');
    await client.query(`CREATE TABLE IF NOT EXISTS yonder.schema_versions (
      version integer PRIMARY KEY,
      min_reader integer NOT NULL,
      description text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now(),
      applied_by name NOT NULL DEFAULT current_user)`);
    const state = (await readSchema(client)) ?? { version: 0, minReader: 0 };
    if (state.minReader > SCHEMA_VERSION) throw schemaError(location, state);
    const applied: number[] = [];
    for (const migration of MIGRATIONS) {
      if (migration.version <= state.version) continue;
      await client.query(migration.sql);
      await client.query(
        'INSERT INTO yonder.schema_versions (version, min_reader, description) VALUES ($1, $2, $3)',
        [migration.version, migration.minReader, migration.description],
      );
      applied.push(migration.version);
    }
    await client.query('COMMIT');
    return { from: state.version, to: Math.max(state.version, SCHEMA_VERSION), applied };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
