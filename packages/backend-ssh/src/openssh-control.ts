/** The system ssh's side of the openssh transport: the private directory of its control sockets, the user's resolved config (`ssh -G`), the options every call gets, the master's check/exit, and ssh's failures put into words. */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync } from 'node:fs';
import { join } from 'node:path';
import { YonderError } from '@yonder/core';
import { ensureTrustedDirectory } from '@yonder/core/backend-kit';
import {
  DEFAULT_CONTROL_PERSIST_SECONDS,
  type OpensshSettings,
} from './openssh-transport-options.js';

/** Seconds between keepalives when the user's config sets none: what the ssh2 transport uses. */
export const DEFAULT_SERVER_ALIVE_SECONDS = 15;

/** Unix socket paths are at most 104 bytes on the BSDs and macOS (108 on Linux); ssh adds a 17-byte suffix while it binds. */
const MAX_CONTROL_PATH = 104 - 18;

/** How ssh is called: the program and the environment (SSH_AUTH_SOCK, SSH_ASKPASS, XDG_RUNTIME_DIR, HOME). */
export interface SshProgram {
  program: string;
  env: NodeJS.ProcessEnv;
}

/** What `ssh -G` says about a host: its lowercase keys, each with every value given. */
export type SshResolved = ReadonlyMap<string, readonly string[]>;

/**
 * The private directory of yonder's control sockets: `$XDG_RUNTIME_DIR/yonder` when the session
 * has one, else `/tmp/yonder-<uid>`. Made 0700 and checked like every directory yonder trusts
 * (the user's, written by nobody else, and so every directory above it).
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the path and the fix.
 */
export function controlDirectory(env: NodeJS.ProcessEnv): string {
  const runtime = env.XDG_RUNTIME_DIR;
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  const wanted = runtime?.startsWith('/') === true ? join(runtime, 'yonder') : `/tmp/yonder-${uid}`;
  const path = ensureTrustedDirectory(wanted, { role: 'the ssh control directory' });
  // Ours and written by nobody else (checked above); nobody else may even look in it.
  if ((lstatSync(path).mode & 0o077) !== 0) chmodSync(path, 0o700);
  if (path.length + 54 > MAX_CONTROL_PATH)
    throw new YonderError(
      'E_UNSAFE_VALUE',
      `The ssh control directory ${path} is too long for a socket path (at most ${MAX_CONTROL_PATH - 54} characters); set XDG_RUNTIME_DIR to a shorter directory.`,
    );
  return path;
}

/** The options that come before everything else in every call: the config file, if the profile names one. */
export function configArguments(settings: OpensshSettings, env: NodeJS.ProcessEnv): string[] {
  if (!settings.config) return [];
  return ['-F', settings.config.replace(/^~(?=\/)/, env.HOME ?? '~')];
}

/** Run ssh to its end and collect what it says (no shell; stdin empty). */
export function runSsh(
  ssh: SshProgram,
  args: readonly string[],
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      ssh.program,
      args,
      { env: ssh.env, timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = (error as { code?: unknown } | null)?.code;
        if (code === 'ENOENT') {
          reject(
            new YonderError(
              'E_TRANSPORT',
              `The ssh program (${ssh.program}) was not found on this machine; install an OpenSSH client or use the ssh2 transport.`,
              { cause: error },
            ),
          );
          return;
        }
        resolve({ code: error ? (typeof code === 'number' ? code : null) : 0, stdout, stderr });
      },
    ).stdin?.end();
  });
}

/** Parse `ssh -G` output: `key value…` lines. */
export function parseResolved(text: string): SshResolved {
  const map = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const match = /^(\S+)\s+(.*)$/.exec(line.trim());
    if (!match) continue;
    const key = (match[1] as string).toLowerCase();
    map.set(key, [...(map.get(key) ?? []), match[2] as string]);
  }
  return map;
}

/** `ssh -G` for the host with the options given: the config exactly as ssh itself resolves it. */
export async function resolveWithSsh(
  ssh: SshProgram,
  args: readonly string[],
  host: string,
): Promise<SshResolved> {
  const result = await runSsh(ssh, ['-G', ...args, '--', host]);
  if (result.code !== 0)
    throw new YonderError(
      'E_TRANSPORT',
      `ssh could not read its config for ${host}: ${lastLines(result.stderr) || `exit status ${result.code}`}`,
    );
  return parseResolved(result.stdout);
}

/**
 * The options of the master connection: ControlMaster=auto, a ControlPath in the control
 * directory by `%C` (a hash of this host, the host, port and user) and the trust key — unless the user's config
 * sets a ControlPath, which is then used — ControlPersist, and ServerAliveInterval, unless the
 * user's config sets them already.
 */
export function controlArguments(
  host: string,
  user: SshResolved,
  settings: OpensshSettings,
  env: NodeJS.ProcessEnv,
): string[] {
  const args: string[] = [];
  const master = user.get('controlmaster')?.[0] ?? 'false';
  if (master === 'false' || master === 'no') args.push('-o', 'ControlMaster=auto');
  if (!user.has('controlpath') || user.get('controlpath')?.[0] === 'none')
    args.push('-o', `ControlPath=${controlDirectory(env)}/${trustKey(host, settings)}-%C`);
  const persist = user.get('controlpersist')?.[0] ?? 'no';
  if (persist === 'no' || persist === '0' || settings.controlPersistSeconds !== undefined)
    args.push(
      '-o',
      `ControlPersist=${settings.controlPersistSeconds ?? DEFAULT_CONTROL_PERSIST_SECONDS}`,
    );
  // A peer that went silent (a frozen host, a network gone without a reset) ends the master,
  // and with it every command on it, after ServerAliveCountMax (3 unless the config says)
  // unanswered keepalives, as on the ssh2 transport, instead of at each command's time limit.
  if ((user.get('serveraliveinterval')?.[0] ?? '0') === '0')
    args.push('-o', `ServerAliveInterval=${DEFAULT_SERVER_ALIVE_SECONDS}`);
  return args;
}

/** Where `userControlSettings` keeps its answer for a host: beside the host's sockets, named by the same key. */
export function controlSettingsFile(
  host: string,
  settings: OpensshSettings,
  env: NodeJS.ProcessEnv,
): string {
  return join(controlDirectory(env), `${trustKey(host, settings)}-settings.json`);
}

/**
 * What besides `%C` (this host, host name, port, user) tells masters apart: the alias and the
 * config file the login was checked by, and whether new host keys were accepted. Two aliases of
 * one host with different known_hosts never share a master, so one never skips the other's
 * host key check.
 */
function trustKey(host: string, settings: OpensshSettings): string {
  return createHash('sha256')
    .update(JSON.stringify([host, settings.config ?? '', settings.acceptNewHostKeys === true]))
    .digest('hex')
    .slice(0, 12);
}

/** The last few lines of what ssh said, for a message. */
export function lastLines(text: string, count = 4): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^Pseudo-terminal will not be allocated/.test(line))
    .slice(-count)
    .join(' / ');
}

/** ssh's words when the server refused one more session on the master (MaxSessions). */
export function isSessionRefused(stderr: string): boolean {
  return /session request failed|Session open refused|open failed: (administratively prohibited|resource shortage)/i.test(
    stderr,
  );
}

/**
 * What ssh's failure before the command started means, as an error: a login that needs a
 * person (a password, a second factor, a key's passphrase: BatchMode stopped it) is
 * `E_LOGIN_REQUIRED`, with the profile in `data` for the front end's hint; anything else
 * `E_TRANSPORT` with ssh's own words.
 */
export function loginError(
  profile: string,
  host: string,
  stderr: string,
  code: number | null,
): YonderError {
  const said = lastLines(stderr) || `ssh exited with status ${code}`;
  if (
    /Permission denied|Too many authentication failures|No more authentication methods|Authentications that can continue|passphrase/i.test(
      stderr,
    )
  )
    return new YonderError(
      'E_LOGIN_REQUIRED',
      `Logging in to ${host} needs more than ssh can do without asking (${said}), and no master connection to it is open.`,
      { data: { profile, host } },
    );
  if (
    /Host key verification failed|HOST IDENTIFICATION HAS CHANGED|host key .* (changed|not known)|REVOKED/i.test(
      stderr,
    )
  )
    return new YonderError('E_TRANSPORT', `ssh refused the host key of ${host}: ${said}`, {
      data: { profile, host },
    });
  return new YonderError('E_TRANSPORT', `ssh could not reach ${host}: ${said}`, {
    data: { profile, host },
  });
}

/** Whether a master connection is up (`ssh -O check`): answered by the socket alone, no login. */
export async function masterRunning(
  ssh: SshProgram,
  args: readonly string[],
  host: string,
): Promise<boolean> {
  const result = await runSsh(ssh, [...args, '-O', 'check', '--', host], 10_000);
  return result.code === 0;
}

/** Close the master connection (`ssh -O exit`); false when none was up. */
export async function exitMaster(
  ssh: SshProgram,
  args: readonly string[],
  host: string,
): Promise<boolean> {
  const result = await runSsh(ssh, [...args, '-O', 'exit', '--', host], 10_000);
  return result.code === 0;
}

/**
 * Open the master connection with ssh on the caller's terminal (`-f -N`: ssh goes to the
 * background once logged in), so that ssh asks whatever the site asks — a password, a second
 * factor, a key's passphrase, an unknown host key — itself, or through SSH_ASKPASS. Resolves with
 * ssh's exit status.
 */
export function openMaster(
  ssh: SshProgram,
  args: readonly string[],
  host: string,
  stdio: 'inherit' | 'pipe',
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(ssh.program, [...args, '-o', 'BatchMode=no', '-f', '-N', '--', host], {
      env: ssh.env,
      stdio: stdio === 'inherit' ? 'inherit' : ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-8192);
    });
    child.on('error', (error) =>
      reject(
        new YonderError('E_TRANSPORT', `Cannot run ${ssh.program}: ${error.message}`, {
          cause: error,
        }),
      ),
    );
    child.on('close', (code) => resolve({ code, stderr }));
  });
}
