export { isPostgresUrl, parseLedgerUrl } from './connection.js';
export type { MigrationResult } from './migrate.js';
export { MIGRATIONS, type Migration, SCHEMA_VERSION } from './migrations.js';
export {
  createPostgresStore,
  type ExportedJob,
  type JobOwner,
  type PostgresLedgerStatus,
  PostgresStore,
  type PostgresStoreOptions,
} from './postgres-store.js';

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
