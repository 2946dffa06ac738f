/**
 * The team ledger through the built CLI, on the private PostgreSQL cluster
 * (scripts/postgres-cluster.sh): export and import between the file ledger and PostgreSQL,
 * many processes of two "hosts" submitting at once, another Unix user refused by the database,
 * and connection failures worded without a password.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleJob } from '@yonder/core/conformance';
import { createFsStore } from '@yonder/store-fs';
import {
  cleanupUsers,
  createTestDatabase,
  dropTestDatabase,
  HOSTILE_FRAGMENTS,
  ownedDir,
  POSTGRES_HOST,
  postgresSql,
  requireCliBuild,
  requireUsers,
  runCli,
  yonderAs,
} from '@yonder/test-helpers';
import { afterAll, describe, expect, it } from 'vitest';

requireCliBuild();
const databases: string[] = [];
afterAll(() => {
  for (const name of databases) dropTestDatabase(name);
  cleanupUsers();
});

function database(prefix: string): { name: string; url: string } {
  const made = createTestDatabase(prefix);
  databases.push(made.name);
  return made;
}

const state = (): string => mkdtempSync(join(tmpdir(), 'yonder-team-'));

describe('export and import', () => {
  it('moves a file ledger to PostgreSQL and back: list --all --json the same bytes, importing twice changes nothing', async () => {
    const fsState = state();
    const source = createFsStore({ location: fsState });
    const names = HOSTILE_FRAGMENTS.slice(0, 12);
    const jobs = names.map((name, n) =>
      sampleJob({
        name: `job ${name}`,
        state: (['succeeded', 'failed', 'cancelled', 'running'] as const)[n % 4],
        exitCode: n % 4 === 0 ? 0 : n % 4 === 1 ? 3 : null,
        createdAt: new Date(Date.UTC(2026, 10, 1, 0, 0, n)).toISOString(),
      }),
    );
    for (const job of jobs) await source.createJob(job);
    await source.saveJobSettings?.(jobs[1]?.id as string, `{"a": "${HOSTILE_FRAGMENTS[0]}"}\n`);
    await source.close();
    const listed = async (env: Record<string, string>, where: string) => {
      const result = await runCli(['list', '--all', '--json', '--no-refresh'], {
        state: where,
        env,
      });
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    const before = await listed({}, fsState);
    expect(JSON.parse(before).result).toHaveLength(jobs.length);
    const exported = await runCli(['ledger', 'export'], { state: fsState });
    expect(exported.code, exported.stderr).toBe(0);
    const file = join(fsState, 'jobs.jsonl');
    writeFileSync(file, exported.stdout);

    const { url } = database('yonder_cli_roundtrip');
    const pgState = state();
    const pg = { YONDER_STORE: url };
    const imported = await runCli(['ledger', 'import', file, '--json'], {
      state: pgState,
      env: pg,
    });
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout).result).toEqual({ imported: jobs.length, present: 0 });
    const again = await runCli(['ledger', 'import', file, '--json'], { state: pgState, env: pg });
    expect(JSON.parse(again.stdout).result).toEqual({ imported: 0, present: jobs.length });
    expect(await listed(pg, pgState)).toBe(before);

    const back = await runCli(['ledger', 'export'], { state: pgState, env: pg });
    expect(back.code, back.stderr).toBe(0);
    const backFile = join(pgState, 'back.jsonl');
    writeFileSync(backFile, back.stdout);
    const fsAgain = state();
    const returned = await runCli(['ledger', 'import', backFile], { state: fsAgain });
    expect(returned.code, returned.stderr).toBe(0);
    expect(await listed({}, fsAgain)).toBe(before);
    const settings = await runCli(['ledger', 'export'], { state: fsAgain });
    expect(settings.stdout).toContain(JSON.stringify(`{"a": "${HOSTILE_FRAGMENTS[0]}"}\n`));
  });

  it('a bad line is named with its number, and nothing is written', async () => {
    const { url } = database('yonder_cli_badimport');
    const where = state();
    const good = JSON.stringify({ job: sampleJob(), owner: null, settings: null });
    const file = join(where, 'bad.jsonl');
    writeFileSync(file, `${good}\n{"job": {"id": "../x"}}\n`);
    const result = await runCli(['ledger', 'import', file], {
      state: where,
      env: { YONDER_STORE: url },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('line 2: job.id is not a job id');
    const status = await runCli(['ledger', 'status', '--json'], {
      state: where,
      env: { YONDER_STORE: url },
    });
    expect(JSON.parse(status.stdout).result).toMatchObject({ store: 'postgres', jobs: 0 });
  });
});

describe('many processes, two hosts', () => {
  it('16 processes × 3 submits from two state directories, with lists and cancels meanwhile: every job recorded once', async () => {
    const { name, url } = database('yonder_cli_many');
    const hosts = [state(), state()];
    const env = { YONDER_STORE: url };
    const submitters = Array.from({ length: 16 }, async (_, n) => {
      const ids: string[] = [];
      for (let k = 0; k < 3; k += 1) {
        const result = await runCli(
          ['submit', '-q', '--name', `p${n}-${k}`, '--', 'sleep', k === 0 ? '600' : '0'],
          { state: hosts[n % 2] as string, env, timeoutMs: 300_000 },
        );
        expect(result.code, result.stderr).toBe(0);
        ids.push(result.stdout.trim());
      }
      return ids;
    });
    const others = Array.from({ length: 4 }, async (_, n) => {
      const where = hosts[n % 2] as string;
      const list = await runCli(['list', '--all-users', '--json'], {
        state: where,
        env,
        timeoutMs: 300_000,
      });
      expect(list.code, list.stderr).toBe(0);
    });
    const ids = (await Promise.all([...submitters, ...others].map((p) => p))).flat() as string[];
    const submitted = ids.filter((id): id is string => typeof id === 'string');
    expect(submitted).toHaveLength(48);
    expect(new Set(submitted).size).toBe(48);
    const long = submitted.filter((_, n) => n % 3 === 0);
    const cancel = await runCli(['cancel', ...long, '--json'], {
      state: hosts[1] as string,
      env,
      timeoutMs: 300_000,
    });
    expect(cancel.code, cancel.stderr).toBe(0);
    const rows = postgresSql(name, 'SELECT id, state FROM yonder.jobs ORDER BY id')
      .trim()
      .split('\n');
    expect(rows.map((row) => row.split('|')[0])).toEqual([...submitted].sort());
    const states = new Map(rows.map((row) => row.split('|') as [string, string]));
    for (const id of long) expect(states.get(id)).toBe('cancelled');
    const events = postgresSql(
      name,
      `SELECT count(DISTINCT job_id) FROM yonder.job_events WHERE previous_state IS NULL`,
    ).trim();
    expect(events).toBe('48');
  }, 600_000);
});

describe('profiles', () => {
  it.each([
    ['the team ledger', true],
    ['the file ledger', false],
  ])('of 6 concurrent `profile add` of one name on %s, exactly one succeeds', async (_, team) => {
    const where = state();
    const env: Record<string, string> = team
      ? { YONDER_STORE: database('yonder_cli_profiles').url }
      : {};
    const adds = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        runCli(
          [
            'profile',
            'add',
            n % 2 ? 'Lab' : 'lab',
            '--backend',
            'local',
            '--poll-seconds',
            String(n + 1),
          ],
          {
            state: where,
            env,
            timeoutMs: 120_000,
          },
        ),
      ),
    );
    expect(adds.filter((add) => add.code === 0)).toHaveLength(1);
    for (const add of adds.filter((result) => result.code !== 0))
      expect(add.stderr).toMatch(/A profile named "(lab|Lab)" exists\. Add --force to replace it/);
  });
});

describe('another Unix user', () => {
  it('reads the job with --all-users but may not cancel or remove it: the database refuses', async () => {
    const { attacker } = requireUsers();
    const { name, url } = database('yonder_cli_users');
    postgresSql(
      'postgres',
      `DO $$ BEGIN CREATE ROLE "${attacker.name}" LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
    );
    const owner = state();
    const migrated = await runCli(['ledger', 'migrate'], {
      state: owner,
      env: { YONDER_STORE: url },
    });
    expect(migrated.code, migrated.stderr).toBe(0);
    const granted = await runCli(['ledger', 'grant', attacker.name], {
      state: owner,
      env: { YONDER_STORE: url },
    });
    expect(granted.code, granted.stderr).toBe(0);
    const submitted = await runCli(['submit', '-q', '--', 'sleep', '60'], {
      state: owner,
      env: { YONDER_STORE: url },
    });
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    // Peer authentication: the attacker's Unix account reaches its own role, no password.
    const peerUrl = `postgresql:///${name}?host=${encodeURIComponent(POSTGRES_HOST)}`;
    const attackerState = ownedDir(attacker, 'team');
    const env = { YONDER_STORE: peerUrl };
    const seen = await yonderAs(attacker, attackerState, ['list', '--all-users', '--json'], env);
    expect(seen.code, seen.stderr).toBe(0);
    expect(JSON.parse(seen.stdout).result.map((job: { id: string }) => job.id)).toContain(id);
    const own = await yonderAs(attacker, attackerState, ['list', '--json'], env);
    expect(JSON.parse(own.stdout).result).toEqual([]);
    const cancel = await yonderAs(attacker, attackerState, ['cancel', id, '--no-wait'], env);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(
      /belongs to yonder; the ledger does not let yonder-attacker change it/,
    );
    const removal = await yonderAs(attacker, attackerState, ['rm', id, '--force'], env);
    expect(removal.code).toBe(1);
    expect(postgresSql(name, `SELECT state FROM yonder.jobs WHERE id = '${id}'`).trim()).toBe(
      'running',
    );
    const cleanup = await runCli(['cancel', id], { state: owner, env: { YONDER_STORE: url } });
    expect(cleanup.code, cleanup.stderr).toBe(0);
  }, 300_000);
});

describe('failures', () => {
  it('a wrong password, a missing database and a bad URL are each named with the fix; no password shown', async () => {
    const { name } = database('yonder_cli_failures');
    const role = `pw_${process.pid}`;
    postgresSql(
      'postgres',
      `CREATE ROLE "${role}" LOGIN PASSWORD 'right-one' IN ROLE yonder_password`,
    );
    try {
      const where = state();
      const host = encodeURIComponent(POSTGRES_HOST);
      const wrong = await runCli(['list', '--json'], {
        state: where,
        env: { YONDER_STORE: `postgresql://${role}:Wr0ng-S3cret@/${name}?host=${host}` },
      });
      expect(wrong.code).toBe(1);
      expect(JSON.parse(wrong.stdout).error.message).toMatch(
        /Wrong password for role .*PGPASSFILE/,
      );
      expect(`${wrong.stdout}${wrong.stderr}`).not.toContain('Wr0ng-S3cret');
      const missing = await runCli(['ledger', 'status'], {
        state: where,
        env: { YONDER_STORE: `postgresql://yonder@/${name}_gone?host=${host}` },
      });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/database "\w+_gone" does not exist .*createdb/);
      const bad = await runCli(['list'], { state: where, env: { YONDER_STORE: 'postgres://h' } });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/YONDER_STORE: names no database; write it as postgresql:\/\//);
      // A schema newer than this yonder reads: both versions and the command that fixes it.
      const { name: newer, url: newerUrl } = database('yonder_cli_newer');
      expect(
        (await runCli(['ledger', 'migrate'], { state: where, env: { YONDER_STORE: newerUrl } }))
          .code,
      ).toBe(0);
      postgresSql(
        newer,
        'INSERT INTO yonder.schema_versions (version, min_reader, description) VALUES (99, 99, $$future$$)',
      );
      const old = await runCli(['submit', '--', 'true'], {
        state: where,
        env: { YONDER_STORE: newerUrl },
      });
      expect(old.code).toBe(1);
      expect(old.stderr).toMatch(
        /schema version 99, which readers of version 99 or later use; this yonder reads schema version 1\. Nothing was written\. Upgrade yonder \(npm install -g @yonder\/cli\)/,
      );
      expect(postgresSql(newer, 'SELECT count(*) FROM yonder.jobs').trim()).toBe('0');
      const onFs = await runCli(['list', '--all-users'], { state: where });
      expect(onFs.code).toBe(2);
      expect(onFs.stderr).toContain('--all-users needs a team ledger');
    } finally {
      postgresSql('postgres', `DROP ROLE IF EXISTS "${role}"`);
    }
  });
});
