/**
 * docs/team-ledger.md as written, on the private PostgreSQL cluster: its ```sh blocks run in
 * order, each as the Unix user the text gives it to — the superuser's as root (the cluster's
 * superuser role), the owner's as root with its own ~/.pgpass, alice's and bob's as the two
 * test users (their names put for alice and bob) — with the cluster's socket directory put
 * for /run/postgresql and `yonder` the checkout's built CLI.
 */

import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cleanupUsers,
  collectProcess,
  dropTestDatabase,
  ownedDir,
  POSTGRES_HOST,
  POSTGRES_SUPERUSER,
  postgresSql,
  REPOSITORY_ROOT,
  requireCliBuild,
  requirePostgres,
  runProgramAs,
  until,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, describe, expect, it } from 'vitest';

requireCliBuild();
requirePostgres();
const { victim: alice, attacker: bob, cli } = usersWithCli(['@yonder/store-postgres']);
const database = `yonder_lab_${process.pid}`;
const owner = `yonder_owner_${process.pid}`;

/** The doc's sh blocks, in order. */
function blocks(): string[] {
  const text = readFileSync(join(REPOSITORY_ROOT, 'docs', 'team-ledger.md'), 'utf8');
  return [...text.matchAll(/^( *)```sh\n([\s\S]*?)^\1```$/gm)].map((match) =>
    (match[2] as string)
      .split('\n')
      .map((line) => line.slice((match[1] as string).length))
      .join('\n'),
  );
}

/** A block with the test's names and places put in. */
function localise(block: string): string {
  return block
    .replaceAll('/run/postgresql', POSTGRES_HOST)
    .replaceAll('yonder_lab', database)
    .replaceAll('yonder_owner', owner)
    .replace(/\balice\b/g, alice.name)
    .replace(/\bbob\b/g, bob.name);
}

/** A directory with a `yonder` that runs the installed CLI, for PATH. */
const bin = mkdtempSync(join(tmpdir(), 'yonder-doc-bin-'));
writeFileSync(join(bin, 'yonder'), `#!/bin/sh\nexec '${process.execPath}' '${cli.bin}' "$@"\n`);
chmodSync(bin, 0o755);
chmodSync(join(bin, 'yonder'), 0o755);
const PATH = `${bin}:/usr/local/bin:/usr/bin:/bin`;

afterAll(() => {
  dropTestDatabase(database);
  for (const role of [owner]) postgresSql('postgres', `DROP ROLE IF EXISTS "${role}"`);
  cleanupUsers();
});

async function asRoot(script: string, env: Record<string, string>) {
  const child = spawn('sh', ['-euc', script], {
    env: { PATH, LANG: 'C.UTF-8', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collectProcess(child);
}

describe('docs/team-ledger.md', () => {
  it('sets up a lab ledger as written: two people, one history, an admin', async () => {
    const [superuser, ownerSteps, person, admin, owners, move] = blocks().map(localise);
    expect([superuser, ownerSteps, person, admin, owners, move].every(Boolean)).toBe(true);
    const setUp = await asRoot(
      // The private cluster lets members of yonder_password use a password; the doc's server
      // decides that in its own pg_hba.conf.
      // The people's roles are shared with other tests, so they may exist already.
      (superuser as string)
        .replace(
          /CREATE ROLE (\S+) LOGIN;/g,
          (_line, name) =>
            `DO $$ BEGIN CREATE ROLE "${name}" LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;`,
        )
        .replace(`CREATEROLE PASSWORD`, `CREATEROLE IN ROLE yonder_password PASSWORD`),
      { PGHOST: POSTGRES_HOST, PGUSER: POSTGRES_SUPERUSER },
    );
    expect(setUp.code, setUp.stderr).toBe(0);

    const ownerHome = ownedDirRoot();
    const migrated = await asRoot(ownerSteps as string, {
      HOME: ownerHome,
      YONDER_STATE_DIR: join(ownerHome, 'state'),
    });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(`${migrated.stdout}${migrated.stderr}`).not.toContain('change-me');

    const aliceState = ownedDir(alice, 'lab');
    const asPerson = (user: typeof alice, script: string, state: string) =>
      runProgramAs(
        user,
        [
          'env',
          '-i',
          `PATH=${PATH}`,
          `HOME=${user.home}`,
          `USER=${user.name}`,
          `LOGNAME=${user.name}`,
          'LANG=C.UTF-8',
          'NO_COLOR=1',
          `YONDER_STATE_DIR=${state}`,
          `XDG_CONFIG_HOME=${join(state, '.no-config')}`,
          'sh',
          '-euc',
          script,
        ],
        { timeoutMs: 120_000 },
      );
    const used = await asPerson(alice, person as string, aliceState);
    expect(used.code, used.stderr).toBe(0);
    expect(used.stdout).toContain(`role: ${alice.name}`);
    expect(used.stdout).toMatch(/sleep/);

    const bobState = ownedDir(bob, 'lab');
    const cancelled = await asPerson(bob, admin as string, bobState);
    expect(cancelled.code, `${cancelled.stdout}${cancelled.stderr}`).toBe(0);
    const state = postgresSql(
      database,
      `SELECT record->'cancel'->>'reason' IS NOT NULL FROM yonder.jobs WHERE owner_role = '${alice.name}'`,
    ).trim();
    expect(state).toBe('t');
    // The owner's next commands carry the cancel out.
    await until(
      async () => {
        const listed = await asPerson(alice, owners as string, aliceState);
        expect(listed.code, listed.stderr).toBe(0);
        return /\bcancelled\b/.test(listed.stdout);
      },
      120_000,
      "alice's job cancelled by her own refresh",
      500,
    );

    const moved = await asPerson(alice, move as string, ownedDir(alice, 'lab-move'));
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toMatch(/Imported 0 jobs into .*; 0 already there/);
  }, 300_000);
});

function ownedDirRoot(): string {
  const home = mkdtempSync(join(tmpdir(), 'yonder-doc-owner-'));
  chmodSync(home, 0o700);
  return home;
}
