/** The team ledger (`StoreV1`) on PostgreSQL: jobs with owners, under the database's row-level security. */
import { randomUUID } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import {
  type JobRecord,
  type LeaseV1,
  type ListJobsOptionsV1,
  type ListJobsResultV1,
  type Profile,
  type StoreProblemV1,
  type StoreV1,
  YonderError,
} from '@yonder/core';
import {
  assertValid,
  profileExists,
  type SaveProfileOptionsV1,
  validateProfileFields,
} from '@yonder/core/backend-kit';
import pg from 'pg';
import { connectionError, type LedgerAddress, parseLedgerUrl } from './connection.js';
import { type MigrationResult, migrate, readSchema, schemaError, usable } from './migrate.js';
import { SCHEMA_VERSION } from './migrations.js';

const JOB_ID = /^[0-9a-f]{6,64}$/;
const TERMINAL = `('succeeded', 'failed', 'cancelled')`;

export interface PostgresStoreOptions {
  /** The ledger's URL: `postgresql://ROLE@HOST/DATABASE` or `postgresql:///DATABASE?host=/run/postgresql`. */
  location: string;
  /** Where the URL was given, named in the error when it is not a ledger URL (default `store`). */
  field?: string;
  /** The Unix user recorded as the owner of the jobs this store creates; this process's by default. */
  user?: string;
  /** The host recorded beside it when a job has no submitter; this machine's name by default. */
  host?: string;
  /** Apply the migrations on first use of a database that has no yonder schema yet (default true). */
  migrateEmpty?: boolean;
  /** Connections kept open at most (default 4). */
  maxConnections?: number;
}

/** Who owns a job: the Unix user and host that submitted it, and the database role it was written under. */
export interface JobOwner {
  readonly user: string;
  readonly host: string;
  readonly role: string;
}

/** What `status()` reports of the ledger. */
export interface PostgresLedgerStatus {
  readonly location: string;
  readonly role: string;
  readonly admin: boolean;
  readonly schemaVersion: number;
  readonly readerVersion: number;
  readonly jobs: number;
}

/** A job as `yonder ledger export` writes it, one JSON line each. */
export interface ExportedJob {
  readonly job: JobRecord;
  readonly owner: JobOwner | null;
  readonly settings: string | null;
}

type Client = pg.PoolClient;

/**
 * The ledger in a PostgreSQL database (schema `yonder`, see `migrations.ts`). Every job row has
 * an owner; the database lets every yonder user read every job and only its owner (or an
 * admin) change it, keeps an event row per write, refuses to move a job out of a final state
 * and holds the leases of shared polls. `listJobs` lists the connected role's own jobs unless
 * `owner` asks for others'.
 */
export class PostgresStore implements StoreV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'postgres';
  readonly location: string;
  private readonly address: LedgerAddress;
  private readonly user: string;
  private readonly host: string;
  private readonly migrateEmpty: boolean;
  private readonly maxConnections: number;
  private pool: pg.Pool | undefined;
  private ready: Promise<void> | undefined;
  /** How to stop each subscription still listening, for `close()`. */
  private readonly listening = new Set<() => Promise<void>>();

  constructor(options: PostgresStoreOptions) {
    this.address = parseLedgerUrl(options.location, options.field);
    this.location = this.address.location;
    this.user = options.user ?? userInfo().username;
    this.host = options.host ?? hostname();
    this.migrateEmpty = options.migrateEmpty ?? true;
    this.maxConnections = options.maxConnections ?? 4;
  }

  // ------------------------------------------------------------ connections

  private getPool(): pg.Pool {
    if (!this.pool) {
      this.pool = new pg.Pool({
        ...this.address.config,
        max: this.maxConnections,
        allowExitOnIdle: true,
      });
      // An idle connection's error (the server restarted) must not end the process; the next
      // query opens a new one.
      this.pool.on('error', () => undefined);
      this.pool.on('connect', (client) => client.on('error', () => undefined));
    }
    return this.pool;
  }

  private async connect(): Promise<Client> {
    try {
      return await this.getPool().connect();
    } catch (error) {
      throw connectionError(this.address, error);
    }
  }

  /** Run `work` with a connection to a database whose schema this reader can use. */
  private async withClient<T>(work: (client: Client) => Promise<T>): Promise<T> {
    if (!this.ready) {
      this.ready = this.checkSchema();
      this.ready.catch(() => {
        this.ready = undefined;
      });
    }
    await this.ready;
    return this.raw(work);
  }

  private async raw<T>(work: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.connect();
    // An error without an SQLSTATE is the connection's own (dropped, reset): that connection
    // is closed rather than handed out again.
    let lost: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      if (YonderError.isInstance(error)) throw error;
      if (!(error as { code?: unknown } | null)?.code && error instanceof Error) lost = error;
      throw connectionError(this.address, error);
    } finally {
      client.release(lost);
    }
  }

  private async transaction<T>(work: (client: Client) => Promise<T>): Promise<T> {
    return this.withClient(async (client) => {
      await client.query('BEGIN');
      try {
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  private async checkSchema(): Promise<void> {
    await this.raw(async (client) => {
      const state = await readSchema(client);
      if (state === undefined && this.migrateEmpty) {
        await migrate(client, this.location);
        return;
      }
      const found = state ?? { version: 0, minReader: 0 };
      if (!usable(found)) throw schemaError(this.location, found);
    });
  }

  /**
   * Apply the migrations this package ships (under an advisory lock; each once). Run by the
   * database's owner (`yonder ledger migrate`).
   */
  async migrate(): Promise<MigrationResult> {
    const result = await this.raw((client) => migrate(client, this.location));
    this.ready = Promise.resolve();
    return result;
  }

  /** The ledger as the connected role sees it: its role, whether it is an admin, the schema, how many jobs. */
  async status(): Promise<PostgresLedgerStatus> {
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ role: string; admin: boolean; jobs: string }>(
        `SELECT current_user AS role,
                yonder.is_admin(current_user) OR
                  (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS admin,
                (SELECT count(*) FROM yonder.jobs) AS jobs`,
      );
      const state = await readSchema(client);
      const row = rows[0] as { role: string; admin: boolean; jobs: string };
      return {
        location: this.location,
        role: row.role,
        admin: row.admin,
        schemaVersion: state?.version ?? 0,
        readerVersion: SCHEMA_VERSION,
        jobs: Number(row.jobs),
      };
    });
  }

  /**
   * Let a login role use the ledger (`yonder_user`), or, with `admin`, see and cancel every
   * job (listed in `yonder.admins`, this database's alone). Run by the database's owner (with
   * CREATEROLE, or the admin option on `yonder_user`).
   */
  async grant(role: string, options: { admin?: boolean } = {}): Promise<void> {
    await this.withClient(async (client) => {
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
      if (exists.rowCount === 0)
        throw new YonderError(
          'E_STORE',
          `There is no role ${JSON.stringify(role)} at the ledger ${this.location}; create it first (CREATE ROLE ${client.escapeIdentifier(role)} LOGIN).`,
          { data: { role } },
        );
      await client.query(`GRANT yonder_user TO ${client.escapeIdentifier(role)}`);
      if (options.admin)
        await client.query('INSERT INTO yonder.admins (role) VALUES ($1) ON CONFLICT DO NOTHING', [
          role,
        ]);
    });
  }

  // ------------------------------------------------------------- profiles

  async saveProfile(profile: Profile, options: SaveProfileOptionsV1 = {}): Promise<void> {
    assertValid(
      'E_INVALID_PROFILE',
      `Profile "${String(profile?.name)}" is invalid`,
      validateProfileFields(profile),
    );
    const saved = await this.withClient((client) =>
      client.query(
        `INSERT INTO yonder.profiles (name_key, body) VALUES ($1, $2)
         ON CONFLICT (owner_role, name_key) DO ${options.create ? 'NOTHING' : 'UPDATE SET body = excluded.body'}`,
        [profile.name.toLowerCase(), JSON.stringify(profile)],
      ),
    );
    if ((saved.rowCount ?? 0) === 0) throw profileExists(profile.name);
  }

  async getProfile(name: string): Promise<Profile | undefined> {
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ body: Profile }>(
        'SELECT body FROM yonder.profiles WHERE owner_role = current_user AND name_key = $1',
        [name.toLowerCase()],
      );
      return rows[0]?.body;
    });
  }

  async listProfiles(): Promise<{ profiles: Profile[]; problems: StoreProblemV1[] }> {
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ name_key: string; body: Profile }>(
        'SELECT name_key, body FROM yonder.profiles WHERE owner_role = current_user ORDER BY name_key',
      );
      const profiles: Profile[] = [];
      const problems: StoreProblemV1[] = [];
      for (const row of rows) {
        const issues = validateProfileFields(row.body);
        if (issues.length === 0) profiles.push(row.body);
        else
          problems.push({
            location: `${this.location} profile ${row.name_key}`,
            message: issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '),
          });
      }
      return { profiles, problems };
    });
  }

  async removeProfile(name: string): Promise<boolean> {
    return this.withClient(async (client) => {
      const result = await client.query(
        'DELETE FROM yonder.profiles WHERE owner_role = current_user AND name_key = $1',
        [name.toLowerCase()],
      );
      return (result.rowCount ?? 0) > 0;
    });
  }

  // ------------------------------------------------------------------ jobs

  async createJob(job: JobRecord): Promise<void> {
    if (!JOB_ID.test(String(job?.id)))
      throw new YonderError('E_STORE', `"${String(job?.id)}" is not a valid job id.`);
    await this.insertJob(job, null);
  }

  /** Insert a job row (the owner: this store's user, or the one given, which only an admin may set). */
  private async insertJob(
    job: JobRecord,
    owner: JobOwner | null,
    options: { ifAbsent?: boolean } = {},
  ): Promise<boolean> {
    return this.withClient(async (client) => {
      try {
        const result = await client.query(
          `INSERT INTO yonder.jobs (id, owner_role, owner_user, owner_host, state, created_at, revision, record)
           VALUES ($1, coalesce($2, current_user), $3, $4, '', '', 0, $5)
           ${options.ifAbsent ? 'ON CONFLICT (id) DO NOTHING' : ''}`,
          [
            job.id,
            owner?.role ?? null,
            owner?.user ?? this.user,
            owner?.host ?? job.submitter?.host ?? this.host,
            JSON.stringify(job),
          ],
        );
        return (result.rowCount ?? 0) > 0;
      } catch (error) {
        if ((error as { code?: unknown }).code === '23505')
          throw new YonderError('E_STORE', `A job with id ${job.id} already exists.`, {
            cause: error,
          });
        throw this.jobError(job.id, error);
      }
    });
  }

  /** A database refusal about one job, worded. */
  private jobError(id: string, error: unknown): YonderError {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'YN001' || code === 'YN002')
      return new YonderError(
        'E_STORE',
        `The ledger refused the change: ${(error as Error).message}.`,
        {
          cause: error,
          data: { id },
        },
      );
    if (code === '42501')
      return new YonderError(
        'E_STORE',
        `The ledger refused the change to job ${id}: ${(error as Error).message}.`,
        { cause: error, data: { id, reason: 'permission' } },
      );
    return connectionError(this.address, error);
  }

  /** The refusal when a job is visible but the database lets this role neither change nor remove it. */
  private async notYours(client: Client, id: string): Promise<YonderError | undefined> {
    const { rows } = await client.query<{ owner_role: string; role: string }>(
      'SELECT owner_role, current_user AS role FROM yonder.jobs WHERE id = $1',
      [id],
    );
    const row = rows[0];
    if (!row) return undefined;
    return new YonderError(
      'E_STORE',
      `Job ${id} belongs to ${row.owner_role}; the ledger does not let ${row.role} change it.`,
      { data: { id, owner: row.owner_role, reason: 'permission' } },
    );
  }

  async getJob(id: string): Promise<JobRecord | undefined> {
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ record: JobRecord }>(
        'SELECT record FROM yonder.jobs WHERE id = $1',
        [id],
      );
      return rows[0]?.record;
    });
  }

  /** Who owns a job (undefined when there is no such job in sight). */
  async getOwner(id: string): Promise<JobOwner | undefined> {
    return this.withClient(async (client) => {
      const { rows } = await client.query<{
        owner_user: string;
        owner_host: string;
        owner_role: string;
      }>('SELECT owner_user, owner_host, owner_role FROM yonder.jobs WHERE id = $1', [id]);
      const row = rows[0];
      return row ? { user: row.owner_user, host: row.owner_host, role: row.owner_role } : undefined;
    });
  }

  async findJobIds(prefix: string): Promise<string[]> {
    if (!/^[0-9a-f]*$/.test(prefix)) return [];
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `SELECT id FROM yonder.jobs WHERE id LIKE $1 ORDER BY id`,
        [`${prefix}%`],
      );
      return rows.map((row) => row.id);
    });
  }

  async updateJob(
    id: string,
    change: (job: JobRecord) => JobRecord | undefined,
  ): Promise<JobRecord> {
    return this.transaction(async (client) => {
      const { rows } = await client.query<{ record: JobRecord }>(
        'SELECT record FROM yonder.jobs WHERE id = $1 FOR UPDATE',
        [id],
      );
      const current = rows[0]?.record;
      if (!current) {
        const refused = await this.notYours(client, id);
        throw refused ?? new YonderError('E_NO_SUCH_JOB', `No job with id ${id}.`);
      }
      const next = change(current);
      if (next === undefined || next === current) return current;
      const written: JobRecord = {
        ...next,
        id: current.id,
        revision: current.revision + 1,
        updatedAt: new Date().toISOString(),
      };
      try {
        await client.query('UPDATE yonder.jobs SET record = $2 WHERE id = $1', [
          id,
          JSON.stringify(written),
        ]);
      } catch (error) {
        throw this.jobError(id, error);
      }
      return written;
    });
  }

  async listJobs(options: ListJobsOptionsV1 = {}): Promise<ListJobsResultV1> {
    return this.withClient(async (client) => {
      const where: string[] = [];
      const values: unknown[] = [];
      const owner = options.owner;
      if (owner === undefined) where.push('owner_role = current_user');
      else if (owner !== '*') {
        values.push(owner);
        where.push(`(owner_role = $${values.length} OR owner_user = $${values.length})`);
      }
      if (options.activeOnly) where.push(`state NOT IN ${TERMINAL}`);
      let sql = `SELECT record FROM yonder.jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY created_at DESC, id DESC`;
      if (!options.activeOnly && options.limit !== undefined) {
        values.push(Math.max(0, Math.floor(options.limit)));
        sql += ` LIMIT $${values.length}`;
      }
      const { rows } = await client.query<{ record: JobRecord }>(sql, values);
      return { jobs: rows.map((row) => row.record), problems: [] };
    });
  }

  async removeJob(id: string): Promise<boolean> {
    return this.transaction(async (client) => {
      const result = await client.query('DELETE FROM yonder.jobs WHERE id = $1', [id]);
      if ((result.rowCount ?? 0) > 0) return true;
      const refused = await this.notYours(client, id);
      if (refused) throw refused;
      return false;
    });
  }

  async saveJobSettings(id: string, text: string): Promise<void> {
    await this.withClient(async (client) => {
      const result = await client.query(
        `INSERT INTO yonder.job_settings (job_id, owner_role, text)
         SELECT id, owner_role, $2 FROM yonder.jobs WHERE id = $1
         ON CONFLICT (job_id) DO UPDATE SET text = excluded.text`,
        [id, text],
      );
      if ((result.rowCount ?? 0) === 0)
        throw new YonderError('E_NO_SUCH_JOB', `No job with id ${id}.`);
    });
  }

  async getJobSettings(id: string): Promise<string | undefined> {
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ text: string }>(
        'SELECT text FROM yonder.job_settings WHERE job_id = $1',
        [id],
      );
      return rows[0]?.text;
    });
  }

  // ------------------------------------------------------ export and import

  /**
   * Every job in sight, oldest first, with its owner and settings (what `yonder ledger export`
   * writes), read a page at a time.
   */
  async *exportJobs(pageSize = 1000): AsyncGenerator<ExportedJob> {
    let after: [string, string] | undefined;
    for (;;) {
      const { rows } = await this.withClient((client) =>
        client.query<{
          record: JobRecord;
          owner_user: string;
          owner_host: string;
          owner_role: string;
          settings: string | null;
          created_at: string;
        }>(
          `SELECT j.record, j.owner_user, j.owner_host, j.owner_role, j.created_at, s.text AS settings
           FROM yonder.jobs j LEFT JOIN yonder.job_settings s ON s.job_id = j.id
           ${after ? 'WHERE (j.created_at, j.id) > ($2, $3)' : ''}
           ORDER BY j.created_at, j.id LIMIT $1`,
          after ? [pageSize, ...after] : [pageSize],
        ),
      );
      for (const row of rows)
        yield {
          job: row.record,
          owner: { user: row.owner_user, host: row.owner_host, role: row.owner_role },
          settings: row.settings,
        };
      if (rows.length < pageSize) return;
      const last = rows[rows.length - 1] as { created_at: string; record: JobRecord };
      after = [last.created_at, last.record.id];
    }
  }

  /**
   * Write an exported job unless a job of its id is there (so importing twice changes
   * nothing). Its owner is kept when the connected role may write for it (its own, or an admin).
   * Returns whether it was written.
   */
  async importJob(entry: ExportedJob): Promise<boolean> {
    const written = await this.insertJob(entry.job, entry.owner, { ifAbsent: true });
    if (written && entry.settings !== null)
      await this.saveJobSettings(entry.job.id, entry.settings);
    return written;
  }

  // ------------------------------------------------------------ notifications

  /**
   * `LISTEN yonder_jobs` on a connection of its own: `listener` gets the id of each job written
   * (the trigger's `NOTIFY`, sent at commit; NOTIFY is not filtered by row-level security, so
   * it carries nothing else). A dropped connection is opened again, with a growing pause;
   * whatever was written meanwhile is found by the listener's own reads.
   */
  async subscribe(listener: (id: string) => void): Promise<() => Promise<void>> {
    await this.withClient(async () => undefined);
    let stopped = false;
    let client: pg.Client | undefined;
    let pause = 100;
    const open = async (): Promise<void> => {
      const next = new pg.Client(this.address.config);
      next.on('notification', (message) => {
        if (message.channel === 'yonder_jobs' && message.payload) listener(message.payload);
      });
      const reopen = (): void => {
        if (stopped || client !== next) return;
        client = undefined;
        next.end().catch(() => undefined);
        setTimeout(() => {
          if (!stopped) open().catch(() => undefined);
        }, pause).unref();
        pause = Math.min(pause * 2, 10_000);
      };
      next.on('error', reopen);
      next.on('end', reopen);
      client = next;
      try {
        await next.connect();
        await next.query('LISTEN yonder_jobs');
        pause = 100;
        if (stopped) await next.end();
      } catch (error) {
        reopen();
        throw connectionError(this.address, error);
      }
    };
    await open();
    const stop = async (): Promise<void> => {
      stopped = true;
      this.listening.delete(stop);
      const last = client;
      client = undefined;
      await last?.end().catch(() => undefined);
    };
    this.listening.add(stop);
    return stop;
  }

  // ----------------------------------------------------------------- leases

  async tryLease(key: string, ttlMs: number): Promise<LeaseV1 | undefined> {
    const holder = randomUUID();
    const row = await this.withClient(async (client) => {
      const { rows } = await client.query<{ last_completed_at: string | null }>(
        `INSERT INTO yonder.leases AS l (key, holder, expires_at)
         VALUES ($1, $2, now() + $3 * interval '1 millisecond')
         ON CONFLICT (owner_role, key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
         WHERE l.holder IS NULL OR l.expires_at <= now()
         RETURNING last_completed_at`,
        [key, holder, Math.max(1, Math.floor(ttlMs))],
      );
      return rows[0];
    });
    if (!row) return undefined;
    return {
      key,
      lastCompletedAt: row.last_completed_at,
      release: async (options = {}) => {
        await this.withClient((client) =>
          client.query(
            `UPDATE yonder.leases SET holder = NULL, expires_at = now(),
               last_completed_at = CASE WHEN $3 THEN $4 ELSE last_completed_at END
             WHERE owner_role = current_user AND key = $1 AND holder = $2`,
            [key, holder, options.completed === true, new Date().toISOString()],
          ),
        );
      },
    };
  }

  async waitForLease(key: string, timeoutMs: number): Promise<string | null> {
    const deadline = Date.now() + timeoutMs;
    let pause = 20;
    for (;;) {
      const row = await this.withClient(async (client) => {
        const { rows } = await client.query<{ held: boolean; last_completed_at: string | null }>(
          `SELECT holder IS NOT NULL AND expires_at > now() AS held, last_completed_at
           FROM yonder.leases WHERE owner_role = current_user AND key = $1`,
          [key],
        );
        return rows[0];
      });
      if (!row?.held || Date.now() >= deadline) return row?.last_completed_at ?? null;
      await delay(Math.min(pause, Math.max(1, deadline - Date.now())));
      pause = Math.min(pause * 2, 250);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.listening].map((stop) => stop()));
    const pool = this.pool;
    this.pool = undefined;
    this.ready = undefined;
    await pool?.end();
  }
}

/** Open the ledger at a PostgreSQL URL (nothing is connected before the first operation). */
export function createPostgresStore(options: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(options);
}
