/**
 * The database itself refuses changes to another user's jobs: through the store as another
 * role, and through psql as another Unix user (peer authentication to its own role). An admin
 * sees and cancels everything; history is append-only; a final state is never left.
 */
import { sampleJob } from '@yonder/core/conformance';
import { POSTGRES_HOST, postgresSql, requireUsers, runProgramAs } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from './index.js';
import { dropAll, passwordRole, type TestLedger, testLedger, track } from './test-ledger.js';

let ledger: TestLedger;
let alice: PostgresStore;
let bob: PostgresStore;
let admin: PostgresStore;
let aliceRole: string;
let aliceUrl: string;
const { attacker } = requireUsers();

beforeAll(async () => {
  ledger = await testLedger('yonder_permissions');
  const a = passwordRole(ledger.name, 'alice');
  aliceRole = a.role;
  aliceUrl = a.url;
  alice = track(createPostgresStore({ location: a.url, user: 'alice', host: 'login1' }));
  bob = track(
    createPostgresStore({
      location: passwordRole(ledger.name, 'bob').url,
      user: 'bob',
      host: 'login2',
    }),
  );
  admin = track(
    createPostgresStore({
      location: passwordRole(ledger.name, 'boss', { admin: true }).url,
      user: 'boss',
    }),
  );
  // The attacker's own login role, reached from its Unix account by peer authentication.
  postgresSql(
    'postgres',
    `DO $$ BEGIN CREATE ROLE "${attacker.name}" LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
  );
  await ledger.owner.grant(attacker.name);
});
afterAll(dropAll);

/** psql as the attacker's Unix user: its own role, by peer authentication. */
async function psqlAsAttacker(sql: string): Promise<{ code: number | null; out: string }> {
  const result = await runProgramAs(attacker, [
    'psql',
    '-X',
    '-At',
    '-h',
    POSTGRES_HOST,
    '-d',
    ledger.name,
    '-c',
    sql,
  ]);
  return { code: result.code, out: `${result.stdout}${result.stderr}` };
}

describe('row-level security', () => {
  it('every user reads every job; only its owner lists it as its own', async () => {
    const job = sampleJob({ state: 'running', name: 'it\'s "quoted" $(x); ünï' });
    await alice.createJob(job);
    expect((await bob.getJob(job.id))?.name).toBe(job.name);
    expect((await bob.listJobs()).jobs.map((j) => j.id)).not.toContain(job.id);
    expect((await bob.listJobs({ owner: '*' })).jobs.map((j) => j.id)).toContain(job.id);
    expect((await bob.listJobs({ owner: 'alice' })).jobs.map((j) => j.id)).toEqual([job.id]);
    expect((await alice.listJobs()).jobs.map((j) => j.id)).toContain(job.id);
    expect(await bob.getOwner(job.id)).toEqual({ user: 'alice', host: 'login1', role: aliceRole });
  });

  it("another role's store may neither change nor remove a job, nor read its settings", async () => {
    const job = sampleJob({ state: 'running' });
    await alice.createJob(job);
    await alice.saveJobSettings(job.id, '{"secretish": true}\n');
    await expect(
      bob.updateJob(job.id, (current) => ({ ...current, state: 'cancelled' })),
    ).rejects.toMatchObject({ code: 'E_STORE', data: { reason: 'permission' } });
    await expect(bob.removeJob(job.id)).rejects.toMatchObject({ data: { reason: 'permission' } });
    expect(await bob.getJobSettings(job.id)).toBeUndefined();
    const after = await alice.getJob(job.id);
    expect(after?.state).toBe('running');
    expect(after?.revision).toBe(job.revision);
    expect(await alice.getJobSettings(job.id)).toBe('{"secretish": true}\n');
  });

  it('psql as another Unix user: reads, but its UPDATE, DELETE and forged INSERT change nothing', async () => {
    const job = sampleJob({ state: 'pending' });
    await alice.createJob(job);
    await alice.saveJobSettings(job.id, 'settings\n');
    const seen = await psqlAsAttacker(`SELECT state FROM yonder.jobs WHERE id = '${job.id}'`);
    expect(seen).toMatchObject({ code: 0, out: 'pending\n' });
    const update = await psqlAsAttacker(
      `UPDATE yonder.jobs SET record = jsonb_set(record::jsonb, '{state}', '"cancelled"')::json WHERE id = '${job.id}'`,
    );
    expect(update.out).toContain('UPDATE 0');
    const removal = await psqlAsAttacker(`DELETE FROM yonder.jobs WHERE id = '${job.id}'`);
    expect(removal.out).toContain('DELETE 0');
    const settings = await psqlAsAttacker(
      `SELECT count(*) FROM yonder.job_settings WHERE job_id = '${job.id}'`,
    );
    expect(settings.out).toBe('0\n');
    const forged = await psqlAsAttacker(
      `INSERT INTO yonder.jobs (id, owner_role, owner_user, owner_host, state, created_at, revision, record)
       SELECT 'abcdef999999', owner_role, 'alice', 'x', '', '', 0,
              jsonb_set(record::jsonb, '{id}', '"abcdef999999"')::json FROM yonder.jobs WHERE id = '${job.id}'`,
    );
    expect(forged.code).not.toBe(0);
    expect(forged.out).toMatch(/row-level security/);
    const event = await psqlAsAttacker(
      `INSERT INTO yonder.job_events (job_id, owner_role, revision, state, written_by) VALUES ('${job.id}', 'x', 9, 'failed', 'x')`,
    );
    expect(event.code).not.toBe(0);
    expect(event.out).toMatch(/permission denied/);
    const history = await psqlAsAttacker(
      `DELETE FROM yonder.job_events WHERE job_id = '${job.id}'`,
    );
    expect(history.out).toMatch(/permission denied/);
    expect((await alice.getJob(job.id))?.state).toBe('pending');
    expect(await alice.getJobSettings(job.id)).toBe('settings\n');
    expect(await alice.getJob('abcdef999999')).toBeUndefined();
  });

  it('an admin sees and cancels every job but removes only its own', async () => {
    const job = sampleJob({ state: 'running' });
    await alice.createJob(job);
    expect((await admin.listJobs({ owner: '*' })).jobs.map((j) => j.id)).toContain(job.id);
    const cancelled = await admin.updateJob(job.id, (current) => ({
      ...current,
      state: 'cancelled',
    }));
    expect(cancelled.state).toBe('cancelled');
    expect(await admin.getJobSettings(job.id)).toBeUndefined();
    await expect(admin.removeJob(job.id)).rejects.toMatchObject({
      data: { reason: 'permission' },
    });
    expect(await alice.removeJob(job.id)).toBe(true);
  });
});

describe('history and final states', () => {
  it('each write is an event row of the same transaction, with the role that wrote it', async () => {
    const job = sampleJob({ state: 'submitting' });
    await alice.createJob(job);
    await alice.updateJob(job.id, (current) => ({ ...current, state: 'pending' }));
    await alice.updateJob(job.id, (current) => ({ ...current, state: 'running' }));
    await alice.updateJob(job.id, () => undefined);
    await admin.updateJob(job.id, (current) => ({ ...current, state: 'failed' }));
    const rows = postgresSql(
      ledger.name,
      `SELECT revision, coalesce(previous_state, '-'), state, written_by = '${aliceRole}' FROM yonder.job_events WHERE job_id = '${job.id}' ORDER BY seq`,
    );
    expect(rows.trim().split('\n')).toEqual([
      '0|-|submitting|t',
      '1|submitting|pending|t',
      '2|pending|running|t',
      '3|running|failed|f',
    ]);
  });

  it('a final state is never left, even by the database superuser', async () => {
    const job = sampleJob({ state: 'running' });
    await alice.createJob(job);
    await alice.updateJob(job.id, (current) => ({ ...current, state: 'succeeded', exitCode: 0 }));
    await expect(
      alice.updateJob(job.id, (current) => ({ ...current, state: 'running' })),
    ).rejects.toMatchObject({ code: 'E_STORE', message: expect.stringMatching(/final state/) });
    await expect(
      alice.updateJob(job.id, (current) => ({ ...current, state: 'failed' })),
    ).rejects.toMatchObject({ code: 'E_STORE' });
    expect(() =>
      postgresSql(
        ledger.name,
        `UPDATE yonder.jobs SET record = jsonb_set(record::jsonb, '{state}', '"running"')::json WHERE id = '${job.id}'`,
      ),
    ).toThrow(/final state/);
    // A final job's record may still change otherwise (a log tail kept, an error cleared).
    const kept = await alice.updateJob(job.id, (current) => ({ ...current, reason: 'noted' }));
    expect(kept).toMatchObject({ state: 'succeeded', reason: 'noted' });
  });

  it('leases are per role: one user on two hosts shares one, another user has its own', async () => {
    const aliceElsewhere = track(
      createPostgresStore({ location: aliceUrl, user: 'alice', host: 'login2' }),
    );
    const first = await alice.tryLease('poll-t', 30_000);
    expect(first).toBeDefined();
    expect(await aliceElsewhere.tryLease('poll-t', 30_000)).toBeUndefined();
    const other = await bob.tryLease('poll-t', 30_000);
    expect(other).toBeDefined();
    await other?.release();
    const waited = aliceElsewhere.waitForLease('poll-t', 60_000);
    await first?.release({ completed: true });
    const completedAt = await waited;
    expect(completedAt).toEqual(expect.any(String));
    expect((await aliceElsewhere.tryLease('poll-t', 30_000))?.lastCompletedAt).toBe(completedAt);
  });
});
