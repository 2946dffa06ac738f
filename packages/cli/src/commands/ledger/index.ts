/** `yonder ledger`: which ledger is in use and whether it answers; migrate and grant a team ledger; export and import jobs between any two. */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { JobRecord, StoreV1 } from '@yonder/core';
import { YonderError } from '@yonder/core';
import type { ExportedJob, PostgresStore } from '@yonder/store-postgres';
import { parse } from '../../args.js';
import type { Command, CommandContext } from '../../command.js';
import { envelope } from '../../output.js';
import { postgresStoreOf } from '../../store-choice.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage:
  yonder ledger status [--json]          which ledger is in use, whether it answers, as which role
  yonder ledger migrate [--json]         bring a PostgreSQL ledger's schema up to this yonder's (as the database's owner)
  yonder ledger grant ROLE [--admin] [--json]
                                         let a database role use the team ledger; --admin: see and cancel every job
  yonder ledger export                   every job, with its owner, history and settings, as JSON lines on stdout
  yonder ledger import FILE [--json]     write the jobs of an export (FILE, or - for stdin) into this ledger;
                                         jobs already there are left as they are, so importing twice changes nothing

The ledger is the file ledger under the state directory unless $YONDER_STORE, else the config
file's "store", names a PostgreSQL database: postgresql://ROLE@HOST/DATABASE, or
postgresql:///DATABASE?host=/run/postgresql for the Unix socket. Keep passwords out of it: use
~/.pgpass (PGPASSFILE) or the socket's peer authentication. docs/team-ledger.md has the set-up.
`;

export const run: Command = async (argv, context) => {
  const { io } = context;
  const { values, positionals } = parse(
    argv,
    { json: { type: 'boolean' }, admin: { type: 'boolean' } },
    'ledger',
  );
  if (values.help || positionals.length === 0) {
    io.stdout(HELP);
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  const [action, ...rest] = positionals;
  const json = Boolean(values.json);
  const expect = (count: number, usage: string): void => {
    if (rest.length !== count) throw new UsageError(`Usage: yonder ledger ${usage}`);
  };
  if (values.admin && action !== 'grant')
    throw new UsageError('--admin goes with: yonder ledger grant ROLE --admin');
  switch (action) {
    case 'status':
      expect(0, 'status [--json]');
      return status(context, json);
    case 'migrate':
      expect(0, 'migrate [--json]');
      return migrate(context, json);
    case 'grant':
      expect(1, 'grant ROLE [--admin] [--json]');
      return grant(context, rest[0] as string, Boolean(values.admin), json);
    case 'export':
      expect(0, 'export > jobs.jsonl');
      return exportJobs(context);
    case 'import':
      expect(1, 'import FILE [--json]');
      return importJobs(context, rest[0] as string, json);
    default:
      throw new UsageError(
        `"${action}" is not a ledger command; use status, migrate, grant, export or import.`,
      );
  }
};

async function status(context: CommandContext, json: boolean): Promise<number> {
  const { io, runtime } = context;
  const { manager, storeChoice } = runtime();
  const postgres = await postgresStoreOf(manager.store);
  if (!postgres) {
    const result = { store: 'fs', location: manager.store.location };
    io.stdout(
      json ? envelope(result) : `store: fs (the file ledger)\nlocation: ${result.location}\n`,
    );
    return 0;
  }
  const found = await postgres.status();
  const result = {
    store: 'postgres',
    source: storeChoice.kind === 'postgres' ? storeChoice.source : null,
    ...found,
  };
  io.stdout(
    json
      ? envelope(result)
      : [
          `store: postgres (from ${result.source})`,
          `location: ${found.location}`,
          `role: ${found.role}${found.admin ? ' (admin: sees and cancels every job)' : ''}`,
          `schema: version ${found.schemaVersion} (this yonder reads version ${found.readerVersion})`,
          `jobs: ${found.jobs}`,
          '',
        ].join('\n'),
  );
  return 0;
}

async function needPostgres(context: CommandContext, what: string): Promise<PostgresStore> {
  const postgres = await postgresStoreOf(context.runtime().manager.store);
  if (!postgres)
    throw new UsageError(
      `yonder ledger ${what} is for a PostgreSQL ledger; this one is the file ledger. Set YONDER_STORE (or the config's "store") to its URL first.`,
    );
  return postgres;
}

async function migrate(context: CommandContext, json: boolean): Promise<number> {
  const postgres = await needPostgres(context, 'migrate');
  const result = await postgres.migrate();
  context.io.stdout(
    json
      ? envelope(result)
      : result.applied.length === 0
        ? `The ledger ${postgres.location} is at schema version ${result.to}; nothing to do.\n`
        : `The ledger ${postgres.location} went from schema version ${result.from} to ${result.to}.\n`,
  );
  return 0;
}

async function grant(
  context: CommandContext,
  role: string,
  admin: boolean,
  json: boolean,
): Promise<number> {
  if (role === '' || /[\0-\x1f\x7f]/.test(role) || role.length > 63)
    throw new UsageError(
      'ROLE: a database role name of 1 to 63 characters, no control characters.',
    );
  const postgres = await needPostgres(context, 'grant');
  await postgres.grant(role, { admin });
  context.io.stdout(
    json
      ? envelope({ role, admin })
      : `${role} may now use the ledger${admin ? ' as an admin (sees and cancels every job)' : ' (its own jobs; reads everyone’s)'}.\n`,
  );
  return 0;
}

/** Every job of any store, oldest first, with its owner (a team ledger's) and settings. */
async function* exported(
  store: StoreV1,
  postgres: PostgresStore | undefined,
): AsyncGenerator<ExportedJob> {
  if (postgres) {
    yield* postgres.exportJobs();
    return;
  }
  const { jobs, problems } = await store.listJobs({});
  if (problems.length > 0)
    throw new YonderError(
      'E_STORE',
      `The ledger ${store.location} has records that cannot be read (${problems[0]?.location}: ${problems[0]?.message}); fix or remove them, then export again.`,
    );
  for (const job of jobs.reverse())
    yield { job, owner: null, settings: (await store.getJobSettings?.(job.id)) ?? null };
}

async function exportJobs(context: CommandContext): Promise<number> {
  const { io, runtime } = context;
  const store = runtime().manager.store;
  const postgres = await postgresStoreOf(store);
  let batch = '';
  for await (const entry of exported(store, postgres)) {
    batch += `${JSON.stringify(entry)}\n`;
    if (batch.length > 1 << 20) {
      io.stdout(batch);
      batch = '';
    }
  }
  io.stdout(batch);
  return 0;
}

/** Each line of an export, checked: a job with an id, an owner or null, settings text or null. */
async function* readExport(file: string): AsyncGenerator<ExportedJob> {
  const input = file === '-' ? process.stdin : createReadStream(file);
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  try {
    for await (const line of lines) {
      number += 1;
      if (line.trim() === '') continue;
      const bad = (what: string): YonderError =>
        new YonderError(
          'E_INVALID_JOB_SPEC',
          `${file}, line ${number}: ${what}; each line must be one job as \`yonder ledger export\` writes it.`,
        );
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw bad('is not JSON');
      }
      const entry = value as Partial<ExportedJob> | null;
      const job = entry?.job as JobRecord | undefined;
      if (!entry || typeof entry !== 'object' || !job || typeof job !== 'object')
        throw bad('has no "job"');
      if (typeof job.id !== 'string' || !/^[0-9a-f]{6,64}$/.test(job.id))
        throw bad('job.id is not a job id');
      if (
        entry.settings !== null &&
        entry.settings !== undefined &&
        typeof entry.settings !== 'string'
      )
        throw bad('"settings" is neither text nor null');
      const owner = entry.owner ?? null;
      if (
        owner !== null &&
        (typeof owner !== 'object' ||
          typeof owner.user !== 'string' ||
          typeof owner.host !== 'string' ||
          typeof owner.role !== 'string')
      )
        throw bad('"owner" is neither null nor {"user","host","role"}');
      yield { job, owner, settings: entry.settings ?? null };
    }
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT')
      throw new YonderError('E_INVALID_JOB_SPEC', `Cannot read ${file}: it does not exist.`);
    throw error;
  }
}

async function importJobs(context: CommandContext, file: string, json: boolean): Promise<number> {
  const { io, runtime } = context;
  const store = runtime().manager.store;
  const postgres = await postgresStoreOf(store);
  // Every line is checked before anything is written.
  for await (const _ of readExport(file));
  let imported = 0;
  let present = 0;
  for await (const entry of readExport(file)) {
    let written: boolean;
    if (postgres) written = await postgres.importJob(entry);
    else if (await store.getJob(entry.job.id)) written = false;
    else {
      await store.createJob(entry.job);
      if (entry.settings !== null) await store.saveJobSettings?.(entry.job.id, entry.settings);
      written = true;
    }
    if (written) imported += 1;
    else present += 1;
  }
  io.stdout(
    json
      ? envelope({ imported, present })
      : `Imported ${imported} job${imported === 1 ? '' : 's'} into ${store.location}; ${present} already there.\n`,
  );
  return 0;
}
