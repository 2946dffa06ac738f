/** Public-key authentication for the ssh2 transport: the keys and agent a host's config allows, RSA keys offered as rsa-sha2-512 then rsa-sha2-256, and a failure explained by what the server asked for that ssh2 cannot give. */
import { readFileSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { getErrorMessage } from '@yonder/core';
import ssh2, { type AuthenticationType, type AuthHandlerMiddleware, type ParsedKey } from 'ssh2';
import type { ResolvedHost } from './ssh-config.js';

const { BaseAgent, OpenSSHAgent, utils } = ssh2;

/** The keys a host's identity files give, and why some could not be used. */
export interface Identities {
  keys: Array<{ file: string; key: ParsedKey }>;
  problems: string[];
  /** `KEY-cert.pub` files beside identities: ssh would offer them, ssh2 cannot. */
  certificates: string[];
  agent: string | undefined;
}

/**
 * Why OpenSSH would refuse the private key `file` ("UNPROTECTED PRIVATE KEY FILE"), or null: a
 * key of the user's that others may read or write, or a key another user owns.
 */
function unprotectedKey(file: string): string | null {
  let info: ReturnType<typeof statSync>;
  try {
    info = statSync(file);
  } catch {
    return null; // read below, which says why it cannot be
  }
  const uid = process.getuid?.();
  const mode = (Number(info.mode) & 0o777).toString(8).padStart(4, '0');
  if (uid !== undefined && info.uid !== uid && info.uid !== 0)
    return `the identity file ${file} belongs to another user (uid ${info.uid}), so it is not used`;
  if ((Number(info.mode) & 0o077) !== 0)
    return `the identity file ${file} may be read or changed by others (mode ${mode}), so it is not used. Fix: chmod 600 ${file}`;
  return null;
}

/** Read the identity files of a host (and decide on the agent) without touching the network. */
export function readIdentities(host: ResolvedHost): Identities {
  const keys: Identities['keys'] = [];
  const problems: string[] = [];
  const certificates: string[] = [...host.certificateFiles];
  if (host.pubkeyAuthentication) {
    for (const file of host.identityFiles) {
      let data: Buffer;
      try {
        const unsafe = unprotectedKey(file);
        if (unsafe) {
          problems.push(unsafe);
          continue;
        }
        data = readFileSync(file);
      } catch (error) {
        if (host.identityFilesExplicit)
          problems.push(
            `the identity file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? getErrorMessage(error)})`,
          );
        continue;
      }
      try {
        readFileSync(`${file}-cert.pub`);
        certificates.push(`${file}-cert.pub`);
      } catch {
        /* no certificate beside it */
      }
      const parsed = utils.parseKey(data);
      if (parsed instanceof Error) {
        problems.push(
          /encrypted|passphrase/i.test(parsed.message)
            ? `the key ${file} is encrypted and no passphrase is available: load it into ssh-agent (ssh-add ${file}) and make sure SSH_AUTH_SOCK is set`
            : `the key ${file} cannot be read: ${parsed.message}`,
        );
        continue;
      }
      keys.push({ file, key: parsed });
    }
  }
  const agent =
    host.pubkeyAuthentication && host.identityAgent && !(host.identitiesOnly && keys.length > 0)
      ? host.identityAgent
      : undefined;
  return { keys, problems, certificates, agent };
}

/**
 * An RSA key that signs with SHA-2 under the algorithm name `rsa-sha2-512` or `-256`. ssh2
 * offers an RSA key under one algorithm only (rsa-sha2-256 when the server lists it), so a
 * server that accepts only rsa-sha2-512 (`PubkeyAcceptedAlgorithms`) refuses it; the same key
 * offered under each name, as OpenSSH does, gets in. The object is the parsed key with its
 * algorithm name and its signing hash replaced.
 */
function rsaWith(key: ParsedKey, algorithm: 'rsa-sha2-512' | 'rsa-sha2-256'): ParsedKey {
  const hash = algorithm === 'rsa-sha2-512' ? 'sha512' : 'sha256';
  const wrapped = Object.create(key) as ParsedKey;
  Object.defineProperty(wrapped, 'type', { value: algorithm });
  Object.defineProperty(wrapped, 'sign', {
    value: (data: Buffer) => key.sign(data, hash),
  });
  return wrapped;
}

/**
 * The certificates an agent holds (`TYPE-cert-v01@openssh.com` identities, which ssh2's agent
 * client drops without a word), as `comment (type)`, read with one REQUEST_IDENTITIES. An agent
 * that does not answer in time gives none.
 */
export function agentCertificates(socket: string, timeoutMs = 5_000): Promise<string[]> {
  return new Promise((resolvePromise) => {
    const chunks: Buffer[] = [];
    const connection = createConnection(socket);
    const finish = (found: string[]): void => {
      clearTimeout(timer);
      connection.destroy();
      resolvePromise(found);
    };
    const timer = setTimeout(() => finish([]), timeoutMs);
    connection.on('error', () => finish([]));
    connection.on('connect', () => connection.write(Buffer.from([0, 0, 0, 1, 11])));
    connection.on('data', (chunk) => {
      chunks.push(chunk);
      const data = Buffer.concat(chunks);
      if (data.length < 4 || data.length < 4 + data.readUInt32BE(0)) return;
      const found: string[] = [];
      // byte SSH_AGENT_IDENTITIES_ANSWER (12), uint32 count, then (string blob, string comment)*.
      if (data[4] === 12) {
        let offset = 9;
        const count = data.readUInt32BE(5);
        const text = (): Buffer => {
          const length = data.readUInt32BE(offset);
          const value = data.subarray(offset + 4, offset + 4 + length);
          offset += 4 + length;
          return value;
        };
        for (let index = 0; index < count && offset < data.length; index += 1) {
          const blob = text();
          const comment = text().toString('utf8');
          const type =
            blob.length >= 4 ? blob.subarray(4, 4 + blob.readUInt32BE(0)).toString() : '';
          if (type.endsWith('-cert-v01@openssh.com')) found.push(`${comment} (${type})`);
        }
      }
      finish(found);
    });
  });
}

/** The agent keys stood in for by an rsa-sha2 name: the key the agent knows, and the hash. */
const AGENT_RSA = new WeakMap<object, { key: ParsedKey; hash: 'sha512' | 'sha256' }>();

// ssh2 takes an agent only if it is a BaseAgent; its typings of the two methods are overloads
// that a plain implementation cannot satisfy, so the base is typed as a bare class here.
const AgentBase = BaseAgent as unknown as new () => object;

/**
 * The user's agent with every RSA identity listed twice, as rsa-sha2-512 and rsa-sha2-256
 * (ssh2 would offer it under one name only), each signed by the agent with that hash.
 */
class Sha2Agent extends AgentBase {
  private readonly inner: InstanceType<typeof OpenSSHAgent>;

  /** `certificates` receives the agent's certificates (ssh2 cannot offer them) as they are found. */
  constructor(
    private readonly socket: string,
    private readonly certificates: string[],
  ) {
    super();
    this.inner = new OpenSSHAgent(socket);
  }

  getIdentities(cb: (error: Error | undefined, keys?: ParsedKey[]) => void): void {
    void agentCertificates(this.socket).then((found) => {
      for (const certificate of found) this.certificates.push(`in the agent: ${certificate}`);
      this.listIdentities(cb);
    });
  }

  private listIdentities(cb: (error: Error | undefined, keys?: ParsedKey[]) => void): void {
    this.inner.getIdentities((error, keys) => {
      if (error || !keys) return cb(error ?? new Error('The agent listed no keys'));
      const listed: ParsedKey[] = [];
      for (const entry of keys) {
        const key = utils.parseKey(entry as unknown as Buffer) as ParsedKey | Error;
        if (key instanceof Error) continue;
        if (key.type !== 'ssh-rsa') {
          listed.push(key);
          continue;
        }
        for (const algorithm of ['rsa-sha2-512', 'rsa-sha2-256'] as const) {
          const wrapped = rsaWith(key, algorithm);
          AGENT_RSA.set(wrapped, { key, hash: algorithm === 'rsa-sha2-512' ? 'sha512' : 'sha256' });
          listed.push(wrapped);
        }
      }
      cb(undefined, listed);
    });
  }

  sign(
    key: ParsedKey,
    data: Buffer,
    options: object | ((error?: Error | null, signature?: Buffer) => void),
    cb?: (error?: Error | null, signature?: Buffer) => void,
  ): void {
    const done = (typeof options === 'function' ? options : cb) as (
      error?: Error | null,
      signature?: Buffer,
    ) => void;
    const stand = AGENT_RSA.get(key);
    const signOptions = stand ? { hash: stand.hash } : typeof options === 'function' ? {} : options;
    this.inner.sign(stand ? stand.key : key, data, signOptions, done);
  }
}

/** What the server said during authentication, for the error when it fails. */
export interface AuthenticationLog {
  /** The methods the server listed last ("can continue"). */
  methodsLeft: string[] | null;
  /** Whether a method succeeded but the server wants another one (a second factor). */
  partialSuccess: boolean;
}

/** ssh2's authHandler for a host: every key (RSA under both SHA-2 names), then the agent. */
export function createAuthHandler(
  host: ResolvedHost,
  identities: Identities,
  log: AuthenticationLog,
): AuthHandlerMiddleware {
  const methods: Array<Record<string, unknown>> = [];
  for (const { key } of identities.keys) {
    if (key.type === 'ssh-rsa')
      for (const algorithm of ['rsa-sha2-512', 'rsa-sha2-256'] as const)
        methods.push({ type: 'publickey', username: host.user, key: rsaWith(key, algorithm) });
    else methods.push({ type: 'publickey', username: host.user, key });
  }
  if (identities.agent)
    methods.push({
      type: 'agent',
      username: host.user,
      agent: new Sha2Agent(identities.agent, identities.certificates),
    });
  let next = 0;
  return ((methodsLeft: AuthenticationType[] | null, partialSuccess: boolean | null) => {
    if (methodsLeft) log.methodsLeft = [...methodsLeft];
    if (partialSuccess) log.partialSuccess = true;
    while (next < methods.length) {
      const method = methods[next] as { type: string };
      next += 1;
      if (
        methodsLeft &&
        !methodsLeft.includes(
          method.type === 'agent' ? 'publickey' : (method.type as AuthenticationType),
        )
      )
        continue;
      return method;
    }
    return false;
  }) as unknown as AuthHandlerMiddleware;
}

const INTERACTIVE: Record<string, string> = {
  'keyboard-interactive': 'keyboard-interactive (prompts: a password, a one-time code, Duo…)',
  password: 'password',
  'gssapi-with-mic': 'gssapi-with-mic (Kerberos)',
  'gssapi-keyex': 'gssapi-keyex (Kerberos)',
  hostbased: 'hostbased',
};

/**
 * Why authentication failed, in terms the user can act on: a second factor the server asked for
 * after the key was accepted, methods ssh2 cannot use, certificates it cannot offer.
 */
export function authenticationFailure(
  label: string,
  identities: Identities,
  log: AuthenticationLog,
): string {
  const tried = [
    ...identities.keys.map((entry) => entry.file),
    ...(identities.agent ? [`agent ${identities.agent}`] : []),
  ];
  const others = (log.methodsLeft ?? []).filter((method) => method !== 'publickey');
  const named = others.map((method) => INTERACTIVE[method] ?? method);
  const parts: string[] = [];
  if (log.partialSuccess && named.length > 0)
    parts.push(
      `Authentication to ${label}: the server accepted the key but asks for more (${named.join(', ')}), which the ssh2 transport cannot answer. Use --transport openssh and log in once with yonder connect.`,
    );
  else {
    parts.push(`Authentication to ${label} failed (tried ${tried.join(', ') || 'no key'}).`);
    if (log.methodsLeft && !log.methodsLeft.includes('publickey'))
      parts.push(
        `The server does not take public keys here; it offers ${named.join(', ') || 'nothing ssh2 can use'}, which the ssh2 transport cannot use: use --transport openssh.`,
      );
    else if (named.length > 0)
      parts.push(
        `The server also offers ${named.join(', ')}, which the ssh2 transport cannot use: if that is how you log in, use --transport openssh.`,
      );
  }
  if (identities.certificates.length > 0)
    parts.push(
      `ssh would also offer the OpenSSH certificate${identities.certificates.length > 1 ? 's' : ''} ${identities.certificates.join(', ')}, which ssh2 cannot use: use --transport openssh.`,
    );
  if (identities.problems.length > 0) parts.push(`Also: ${identities.problems.join('; ')}.`);
  return parts.join(' ');
}
