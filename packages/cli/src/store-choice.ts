/**
 * Which ledger the CLI uses: `YONDER_STORE`, else the config file's `store`, else the file
 * ledger under the state directory. A PostgreSQL URL opens `@yonder/store-postgres`, installed
 * beside the CLI as the bundled backends are and loaded only on the ledger's first use (so
 * commands that never touch it do not load the driver); the package checks the URL itself.
 */
import type {
  JobRecord,
  LeaseV1,
  ListJobsOptionsV1,
  ListJobsResultV1,
  Profile,
  StoreProblemV1,
  StoreV1,
} from '@yonder/core';
import { YonderError } from '@yonder/core';
import type { SaveProfileOptionsV1 } from '@yonder/core/backend-kit';
import { createFsStore } from '@yonder/store-fs';
import type { PostgresStore } from '@yonder/store-postgres';
import { readConfig } from './plugins/config.js';

/** The ledger chosen: where it is, and where that was said. */
export type StoreChoice =
  | { readonly kind: 'fs'; readonly location: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly source: string };

/**
 * The ledger this environment names. A config the CLI cannot trust or read names none (the
 * file ledger, which cannot be redirected by someone else's file); its error is reported where
 * the config's plugins are loaded.
 * @throws YonderError `E_INVALID_CONFIG` when YONDER_STORE or the config's `store` is no ledger URL.
 */
export function chooseStore(env: NodeJS.ProcessEnv, stateDirectory: string): StoreChoice {
  const fromEnv = env.YONDER_STORE?.trim();
  if (fromEnv) return checked(fromEnv, 'YONDER_STORE', stateDirectory, false);
  let configured: string | null = null;
  let path: string | null = null;
  try {
    const config = readConfig(env);
    configured = config.store;
    path = config.path;
  } catch {
    return { kind: 'fs', location: stateDirectory };
  }
  if (configured === null) return { kind: 'fs', location: stateDirectory };
  return checked(configured, `store (in ${path})`, stateDirectory, true);
}

function checked(
  value: string,
  field: string,
  stateDirectory: string,
  inFile: boolean,
): StoreChoice {
  if (value === 'fs') return { kind: 'fs', location: stateDirectory };
  if (!/^postgres(ql)?:\/\//i.test(value))
    throw new YonderError(
      'E_INVALID_CONFIG',
      `${field}: "${value.slice(0, 200)}" names no ledger; write "fs" for the file ledger or a URL postgresql://ROLE@HOST/DATABASE (postgresql:///DATABASE?host=/run/postgresql for the Unix socket).`,
      { data: { field } },
    );
  if (inFile && /^[^/]*\/\/[^/@?#]*:[^/@?#]*@/.test(value))
    throw new YonderError(
      'E_INVALID_CONFIG',
      `${field}: the URL holds a password, which a file must not keep; remove it and put it in your PGPASSFILE (~/.pgpass, mode 0600), or use the Unix socket's peer authentication.`,
      { data: { field } },
    );
  return { kind: 'postgres', url: value, source: field };
}

/** Imports a package of the CLI's own installation, checked (`Runtime.importOwn`); null when not installed. */
export type ImportOwn = (name: string) => Promise<Record<string, unknown> | null>;

/** The store for a choice: the file ledger now, or the PostgreSQL ledger on first use. */
export function openStore(choice: StoreChoice, importOwn: ImportOwn): StoreV1 {
  return choice.kind === 'fs'
    ? createFsStore({ location: choice.location })
    : new LazyPostgresStore(choice.url, choice.source, importOwn);
}

/** The PostgreSQL store itself, for the commands that manage it (`yonder ledger`). */
export async function postgresStoreOf(store: StoreV1): Promise<PostgresStore | undefined> {
  return store instanceof LazyPostgresStore ? store.open() : undefined;
}

type StorePostgresModule = typeof import('@yonder/store-postgres');

/** A PostgreSQL store loaded and opened on its first use. */
class LazyPostgresStore implements StoreV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'postgres';
  private store: Promise<PostgresStore> | undefined;
  private opened: PostgresStore | undefined;

  constructor(
    private readonly url: string,
    private readonly source: string,
    private readonly importOwn: ImportOwn,
  ) {}

  /** The URL without its password once the store has read it; before that, where it was named. */
  get location(): string {
    return this.opened?.location ?? `the ledger named by ${this.source}`;
  }

  open(): Promise<PostgresStore> {
    this.store ??= this.importOwn('@yonder/store-postgres').then((module) => {
      if (module === null)
        throw new YonderError(
          'E_PLUGIN',
          `${this.source} names a PostgreSQL ledger, which needs the package @yonder/store-postgres, which is not installed. Install it beside yonder: npm install @yonder/store-postgres (with -g when yonder is installed globally).`,
        );
      this.opened = (module as StorePostgresModule).createPostgresStore({
        location: this.url,
        field: this.source,
      });
      return this.opened;
    });
    this.store.catch(() => {
      this.store = undefined;
    });
    return this.store;
  }

  async saveProfile(profile: Profile, options?: SaveProfileOptionsV1): Promise<void> {
    return (await this.open()).saveProfile(profile, options);
  }
  async getProfile(name: string): Promise<Profile | undefined> {
    return (await this.open()).getProfile(name);
  }
  async listProfiles(): Promise<{ profiles: Profile[]; problems: StoreProblemV1[] }> {
    return (await this.open()).listProfiles();
  }
  async removeProfile(name: string): Promise<boolean> {
    return (await this.open()).removeProfile(name);
  }
  async createJob(job: JobRecord): Promise<void> {
    return (await this.open()).createJob(job);
  }
  async getJob(id: string): Promise<JobRecord | undefined> {
    return (await this.open()).getJob(id);
  }
  async findJobIds(prefix: string): Promise<string[]> {
    return (await this.open()).findJobIds(prefix);
  }
  async updateJob(
    id: string,
    change: (job: JobRecord) => JobRecord | undefined,
  ): Promise<JobRecord> {
    return (await this.open()).updateJob(id, change);
  }
  async listJobs(options?: ListJobsOptionsV1): Promise<ListJobsResultV1> {
    return (await this.open()).listJobs(options);
  }
  async removeJob(id: string): Promise<boolean> {
    return (await this.open()).removeJob(id);
  }
  async saveJobSettings(id: string, text: string): Promise<void> {
    return (await this.open()).saveJobSettings(id, text);
  }
  async getJobSettings(id: string): Promise<string | undefined> {
    return (await this.open()).getJobSettings(id);
  }
  async tryLease(key: string, ttlMs: number): Promise<LeaseV1 | undefined> {
    return (await this.open()).tryLease(key, ttlMs);
  }
  async waitForLease(key: string, timeoutMs: number): Promise<string | null> {
    return (await this.open()).waitForLease(key, timeoutMs);
  }
  async subscribe(listener: (id: string) => void): Promise<() => Promise<void>> {
    return (await this.open()).subscribe(listener);
  }
  async close(): Promise<void> {
    if (this.store) await (await this.store).close();
  }
}
