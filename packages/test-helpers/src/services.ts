/**
 * The shared test services, a one-node Slurm, a one-node Grid Engine, sshd hosts on loopback
 * and a private PostgreSQL, reached through the repository's own scripts: is one up (fail, never
 * skip, naming the command that starts it), control it, read the sshd hosts' paths, make a
 * database.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPOSITORY_ROOT } from './repository.js';

export const SLURM_SCRIPT = join(REPOSITORY_ROOT, 'scripts/slurm-cluster.sh');
export const SSH_HOSTS_SCRIPT = join(REPOSITORY_ROOT, 'scripts/sshd-hosts.sh');
export const GRIDENGINE_SCRIPT = join(REPOSITORY_ROOT, 'scripts/gridengine-cluster.sh');
export const POSTGRES_SCRIPT = join(REPOSITORY_ROOT, 'scripts/postgres-cluster.sh');
/** The private PostgreSQL cluster's socket directory (`scripts/postgres-cluster.sh`). */
export const POSTGRES_HOST = process.env.YONDER_PG_DIR ?? '/tmp/yonder-postgres';
/** Its superuser role, reached by peer authentication from root. */
export const POSTGRES_SUPERUSER = 'yonder';

const QUIET = {
  YONDER_SLURM_QUIET: '1',
  YONDER_SSH_QUIET: '1',
  YONDER_GRIDENGINE_QUIET: '1',
  YONDER_PG_QUIET: '1',
};

/** Run `bash SCRIPT COMMAND ARGS…` (start, stop-ctld, kill-connections, …); throws if it fails. */
export function serviceCommand(script: string, command: string, ...args: string[]): void {
  execFileSync('bash', [script, command, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, ...QUIET },
    timeout: 180_000,
  });
}

/** The exit status of `bash SCRIPT status` (0: up and healthy). */
export function serviceStatus(script: string): number {
  return (
    spawnSync('bash', [script, 'status'], {
      stdio: 'ignore',
      env: { ...process.env, ...QUIET },
      timeout: 60_000,
    }).status ?? 1
  );
}

/** Fail (never skip) when the Slurm test cluster is down. */
export function requireSlurm(): void {
  if (serviceStatus(SLURM_SCRIPT) !== 0)
    throw new Error(
      'The Slurm test cluster is not running. Start it as root with: bash scripts/slurm-cluster.sh start',
    );
}

/**
 * Fail (never skip) when the Grid Engine test cluster is down. (@yonder/backend-gridengine's own
 * tests have their own copy: that package imports nothing of yonder's but the public kit.)
 */
export function requireGridEngine(): void {
  if (serviceStatus(GRIDENGINE_SCRIPT) !== 0)
    throw new Error(
      'The Grid Engine test cluster is not running. Start it as root with: bash scripts/gridengine-cluster.sh start',
    );
}

/** Fail (never skip) when the sshd test hosts are down. */
export function requireSshHosts(): void {
  if (serviceStatus(SSH_HOSTS_SCRIPT) !== 0)
    throw new Error(
      'The sshd test hosts are not running. Start them as root with: bash scripts/sshd-hosts.sh start',
    );
}

/**
 * The sshd test hosts' paths (`bash scripts/sshd-hosts.sh env`: `YONDER_SSH_CONFIG`,
 * `YONDER_SSH_DIR`, …); fails, never skips, when they are down.
 */
export function sshHostsEnv(): Record<string, string> {
  requireSshHosts();
  const text = execFileSync('bash', [SSH_HOSTS_SCRIPT, 'env'], { encoding: 'utf8' });
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^export ([A-Z_][A-Z0-9_]*)='(.*)'$/.exec(line);
    if (match) env[match[1] as string] = (match[2] as string).replaceAll("'\\''", "'");
  }
  return env;
}

/** Fail (never skip) when the private PostgreSQL cluster is down. */
export function requirePostgres(): void {
  if (serviceStatus(POSTGRES_SCRIPT) !== 0)
    throw new Error(
      'The PostgreSQL test cluster is not running. Start it with: bash scripts/postgres-cluster.sh start',
    );
}

let databases = 0;

/**
 * A new, empty database in the private cluster (fails, never skips, when it is down), named
 * `PREFIX_<pid>_<n>`; returns its name and its URL (the Unix-socket form, as the superuser).
 * Dropped by `dropTestDatabase`.
 */
export function createTestDatabase(prefix = 'yonder_test'): { name: string; url: string } {
  requirePostgres();
  databases += 1;
  const name = `${prefix}_${process.pid}_${databases}_${Date.now().toString(36)}`;
  postgresSql('postgres', `CREATE DATABASE "${name}"`);
  return { name, url: postgresUrl(name) };
}

/** The Unix-socket URL of a database of the private cluster, as ROLE (the superuser by default). */
export function postgresUrl(database: string, role = POSTGRES_SUPERUSER): string {
  return `postgresql://${encodeURIComponent(role)}@/${encodeURIComponent(database)}?host=${encodeURIComponent(POSTGRES_HOST)}`;
}

/** Drop a database made by `createTestDatabase`, ending its connections first. */
export function dropTestDatabase(name: string): void {
  postgresSql('postgres', `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

/** Run SQL through psql as the cluster's superuser; returns its unaligned, tuples-only output. */
export function postgresSql(database: string, sql: string): string {
  return execFileSync(
    'psql',
    [
      '-X',
      '-q',
      '-At',
      '-v',
      'ON_ERROR_STOP=1',
      '-h',
      POSTGRES_HOST,
      '-U',
      POSTGRES_SUPERUSER,
      '-d',
      database,
      '-c',
      sql,
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
  );
}
