/**
 * A ledger URL: checked, shown without its password, and turned into pg's settings; and the
 * driver's connection errors worded with what is wrong and the fix.
 */
import { userInfo } from 'node:os';
import { getErrorMessage, YonderError } from '@yonder/core';
import type { PoolConfig } from 'pg';

export interface LedgerAddress {
  /** For messages: the URL without its password (never shown anywhere). */
  readonly location: string;
  readonly database: string;
  /** The role asked for (the login name when the URL names none). */
  readonly role: string;
  /** pg's settings: the connection string, password included when the URL had one. */
  readonly config: PoolConfig;
}

const FORM =
  'postgresql://ROLE@HOST/DATABASE, or for the Unix socket postgresql:///DATABASE?host=/run/postgresql';

/** Whether a `store` value names a PostgreSQL ledger. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/**
 * Check a ledger URL and split it: a `postgres://` or `postgresql://` URL naming a database.
 * @throws YonderError `E_INVALID_CONFIG` naming what is wrong and the form to use.
 */
export function parseLedgerUrl(url: string, field = 'store'): LedgerAddress {
  const bad = (what: string): YonderError =>
    new YonderError('E_INVALID_CONFIG', `${field}: ${what}; write it as ${FORM}.`, {
      data: { field },
    });
  if (!isPostgresUrl(url)) throw bad('is not a postgres:// or postgresql:// URL');
  if (/[\0-\x1f\x7f]/.test(url)) throw bad('holds a control character');
  // scheme://[role[:password]@][host[:port]][/database][?parameters] — the host may be empty
  // (the Unix socket, with ?host=DIRECTORY), which WHATWG URLs refuse after a role.
  const match =
    /^(postgres(?:ql)?):\/\/(?:([^:@/?#]*)(?::([^@/?#]*))?@)?([^/?#]*)(?:\/([^?#]*))?(?:\?([^#]*))?$/i.exec(
      url,
    );
  if (!match) throw bad('is not a URL');
  const [, scheme, user = '', password, host = '', path = '', query = ''] = match;
  const decode = (text: string, what: string): string => {
    try {
      return decodeURIComponent(text);
    } catch {
      throw bad(`has a ${what} that is not valid percent-encoding`);
    }
  };
  const database = decode(path, 'database name');
  if (!database || database.includes('/')) throw bad('names no database');
  // No role: the login name, as libpq does (node-postgres would take $USER, which may be unset).
  const login = userInfo().username;
  const role = user ? decode(user, 'role name') : login;
  const parameters = new URLSearchParams(query);
  for (const key of [...parameters.keys()])
    if (/^(password|sslpassword)$/i.test(key)) parameters.delete(key);
  const shownQuery = parameters.toString().replaceAll('%2F', '/');
  const location = `${scheme}://${user ? `${user}@` : ''}${host}/${path}${shownQuery ? `?${shownQuery}` : ''}`;
  void password;
  return {
    location,
    database,
    role,
    config: {
      connectionString: user ? url : url.replace('://', `://${encodeURIComponent(login)}@`),
      application_name: 'yonder',
      connectionTimeoutMillis: 30_000,
    },
  };
}

/** A pg or socket error as yonder says it: what failed, at which ledger, and the fix. */
export function connectionError(address: LedgerAddress, error: unknown): YonderError {
  if (YonderError.isInstance(error)) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = getErrorMessage(error);
  const role = address.role;
  const at = `the ledger ${address.location}`;
  const make = (text: string, reason: string): YonderError =>
    new YonderError('E_STORE', text, { cause: error, data: { store: address.location, reason } });
  if (code === '28P01')
    return make(
      `Wrong password for role ${role} at ${at}. Fix the password in your PGPASSFILE (~/.pgpass, mode 0600) or in the URL of YONDER_STORE.`,
      'password',
    );
  if (code === '3D000')
    return make(
      `The database "${address.database}" does not exist at ${at}. Create it (createdb ${address.database}, as its owner-to-be) or correct the database in the URL.`,
      'database',
    );
  if (code === '28000' && /role .* does not exist/.test(message))
    return make(
      `The role ${role} does not exist at ${at}. Ask the ledger's admin to create it (CREATE ROLE "${role}" LOGIN) and let it use the ledger (GRANT yonder_user TO "${role}"), or correct the role in the URL.`,
      'role',
    );
  if (code === '28000')
    return make(
      `The server refused role ${role} at ${at}: ${message}. Connect as the role of your own login name, or ask the ledger's admin to allow it in pg_hba.conf.`,
      'auth',
    );
  if (
    code === 'ENOENT' ||
    code === 'ECONNREFUSED' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENOTFOUND'
  )
    return make(
      `No PostgreSQL server answers at ${at} (${message}). Start the server, or correct the host (or ?host=SOCKET-DIRECTORY) in the URL.`,
      'unreachable',
    );
  if (code === '42501') return make(`Permission denied at ${at}: ${message}.`, 'permission');
  return make(`The ledger ${address.location} failed: ${message}.`, 'failed');
}
