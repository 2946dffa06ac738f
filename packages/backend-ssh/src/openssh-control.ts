/** The system ssh's side of the openssh transport: the private directory of its control sockets, the user's resolved config (`ssh -G`), the options every call gets, the master's check/exit, and ssh's failures put into words. */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  constants,
  lstatSync,
  mkdtempSync,
  readdirSync,
  rmdirSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { UntrustedPathError, YonderError } from '@yonder/core';
import {
  checkTrustedPath,
  createPrivateFile,
  ensureTrustedDirectory,
  readPrivateFile,
  writePrivateFileAtomic,
} from '@yonder/core/backend-kit';
import {
  DEFAULT_CONTROL_PERSIST_SECONDS,
  type OpensshSettings,
} from './openssh-transport-options.js';
import { checkSshFile } from './ssh-file-trust.js';

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

/** Where a directory of control sockets may be made when the session has no XDG_RUNTIME_DIR. */
const SHARED_TEMPORARY = '/tmp';

/** A control directory as mkdtemp names it for this user: `/tmp/yonder-<uid>-XXXXXX`. */
function isOwnTemporaryName(path: string, uid: number | string): boolean {
  return new RegExp(`^${SHARED_TEMPORARY}/yonder-${uid}-[A-Za-z0-9]{6}$`).test(path);
}

/** The file system's refusal to make or write `path`, as an error naming the directory and what will work. */
function unwritable(path: string, error: unknown, fix: string): YonderError {
  const code = (error as NodeJS.ErrnoException).code ?? 'EACCES';
  return new YonderError(
    'E_UNSAFE_VALUE',
    `The ssh control directory ${path} cannot be written (${code}${code === 'EROFS' ? ': a read-only file system' : ''}), so no master connection can be kept there. Fix: ${fix}`,
    { cause: error },
  );
}

/** Whether `path` is a directory with the sticky bit (as /tmp): its entries only their owners can move. */
function isSticky(path: string): boolean {
  try {
    return (lstatSync(path).mode & 0o1000) !== 0;
  } catch {
    return false;
  }
}

/** `path` made (0700) and checked as a trusted directory that can be written; its real path. */
function writableTrustedDirectory(path: string, fix: string): string {
  let real: string;
  try {
    real = ensureTrustedDirectory(path, { role: 'the ssh control directory' });
  } catch (error) {
    if (UntrustedPathError.isInstance(error) && error.path === path && isSticky(dirname(path))) {
      // Another user's, in a directory all may write (XDG_RUNTIME_DIR=/tmp): only they can move it.
      const said = error.message.slice(0, error.message.lastIndexOf(' Fix: '));
      throw new UntrustedPathError({
        subject: error.subject,
        path: error.path,
        owner: error.owner,
        mode: error.mode,
        message: `${said} It is in ${dirname(path)}, where only its owner can move it. Fix: ${fix}`,
      });
    }
    if (error instanceof YonderError) throw error;
    throw unwritable(path, error, fix);
  }
  // Ours and written by nobody else (checked above); nobody else may even look in it.
  try {
    if ((lstatSync(real).mode & 0o077) !== 0) chmodSync(real, 0o700);
    accessSync(real, constants.W_OK);
  } catch (error) {
    throw unwritable(real, error, fix);
  }
  return real;
}

/**
 * Without XDG_RUNTIME_DIR: a directory of the user's in /tmp that no one else can make first — made
 * by mkdtemp (`/tmp/yonder-<uid>-XXXXXX`), its name kept in the user's cache directory
 * (`${XDG_CACHE_HOME:-~/.cache}/yonder/ssh-control-directory`, checked as every directory yonder
 * trusts) so that every process finds the same one. A recorded directory gone (a reboot) or
 * not the user's (another user made one of that name after it went) is replaced by a new one.
 */
function temporaryControlDirectory(env: NodeJS.ProcessEnv, uid: number | string): string {
  const cacheHome = env.XDG_CACHE_HOME?.startsWith('/')
    ? env.XDG_CACHE_HOME
    : join(env.HOME?.startsWith('/') ? env.HOME : homedir(), '.cache');
  const fix = `set XDG_RUNTIME_DIR to a directory only you can write, on a file system that can be written and whose path is short (as /run/user/${uid} is).`;
  let cache: string;
  try {
    cache = ensureTrustedDirectory(join(cacheHome, 'yonder'), {
      role: 'the cache directory',
    });
  } catch (error) {
    if (error instanceof YonderError) throw error;
    throw new YonderError(
      'E_UNSAFE_VALUE',
      `The cache directory ${join(cacheHome, 'yonder')}, where yonder keeps the name of its ssh control directory, cannot be made (${(error as NodeJS.ErrnoException).code ?? String(error)}). Fix: ${fix}`,
      { cause: error },
    );
  }
  const record = join(cache, 'ssh-control-directory');
  const usable = (path: string | undefined): string | undefined => {
    const name = path?.trim();
    if (name === undefined || !isOwnTemporaryName(name, uid)) return undefined;
    try {
      return checkTrustedPath(name, { type: 'directory' }) ? name : undefined;
    } catch {
      return undefined; // not the user's (any more): never used, a new one is made
    }
  };
  const recorded = readPrivateFile(record, 4096);
  const found = usable(recorded);
  if (found) return writableTrustedDirectory(found, fix);
  let made: string;
  try {
    made = mkdtempSync(join(SHARED_TEMPORARY, `yonder-${uid}-`));
  } catch (error) {
    throw unwritable(SHARED_TEMPORARY, error, fix);
  }
  try {
    if (recorded === undefined) createPrivateFile(record, made);
    else writePrivateFileAtomic(record, made);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Another process recorded its own first: use that one.
    const theirs = usable(readPrivateFile(record, 4096));
    if (theirs) {
      rmdirSync(made);
      return writableTrustedDirectory(theirs, fix);
    }
    writePrivateFileAtomic(record, made);
  }
  return writableTrustedDirectory(made, fix);
}

/**
 * The private directory of yonder's control sockets: `$XDG_RUNTIME_DIR/yonder` when the session
 * has one, else a directory made by mkdtemp in /tmp (see temporaryControlDirectory: a fixed name
 * there is one another user could make first). Made 0700 and checked like every directory yonder
 * trusts (the user's, written by nobody else, and so every directory above it), and writable.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the path and the fix; YonderError
 * `E_UNSAFE_VALUE` when it cannot be made or written, or is too long for a socket path.
 */
export function controlDirectory(env: NodeJS.ProcessEnv): string {
  const runtime = env.XDG_RUNTIME_DIR;
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  const path =
    runtime?.startsWith('/') === true
      ? writableTrustedDirectory(
          join(runtime, 'yonder'),
          `make XDG_RUNTIME_DIR (${runtime}) a directory only you can write, that can be written (as /run/user/${uid} is), or unset it to let yonder make one of its own in /tmp.`,
        )
      : temporaryControlDirectory(env, uid);
  if (path.length + 54 > MAX_CONTROL_PATH)
    throw new YonderError(
      'E_UNSAFE_VALUE',
      `The ssh control directory ${path} is too long for a socket path (at most ${MAX_CONTROL_PATH - 54} characters); set XDG_RUNTIME_DIR to a shorter directory.`,
    );
  return path;
}

/**
 * The options that come before everything else in every call: the config file, if the profile
 * names one — judged by the one trust rule first, since ssh itself does not check a file given
 * with -F (only the files that one includes), and another user's line in it (a ProxyCommand, a
 * Match exec) would run as this user.
 * @throws UntrustedPathError `E_UNTRUSTED_PATH` naming the file, its owner and mode, and the fix.
 */
export function configArguments(settings: OpensshSettings, env: NodeJS.ProcessEnv): string[] {
  if (!settings.config) return [];
  const file = settings.config.replace(/^~(?=\/)/, env.HOME ?? '~');
  checkSshFile(file, 'the ssh config');
  return ['-F', file];
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

/** Seconds ssh waits for the TCP connection when the user's config sets no ConnectTimeout: what the ssh2 transport waits. */
export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 20;

/**
 * The options of the master connection: ControlMaster=auto (the user's `yes` too: a command must
 * use a master that is up, never try to become one, and `ask` becomes `autoask`), a ControlPath
 * in the control directory by `%C` (a hash of this host, the host, port and user) and the trust
 * key — unless the user's config sets a ControlPath, which is then used once checked (see
 * checkUserControlPath) — ControlPersist, ServerAliveInterval and ConnectTimeout, unless the
 * user's config sets them already.
 * @throws UntrustedPathError, YonderError: the control directory or the user's ControlPath is unusable.
 */
export function controlArguments(
  host: string,
  user: SshResolved,
  settings: OpensshSettings,
  env: NodeJS.ProcessEnv,
): string[] {
  const args: string[] = [];
  const master = user.get('controlmaster')?.[0] ?? 'false';
  if (master === 'ask') args.push('-o', 'ControlMaster=autoask');
  else if (master !== 'auto' && master !== 'autoask') args.push('-o', 'ControlMaster=auto');
  const own = user.get('controlpath')?.[0];
  if (own === undefined || own === 'none') {
    const directory = controlDirectory(env);
    const key = trustKey(host, settings);
    checkOwnControlSockets(directory, key);
    args.push('-o', `ControlPath=${directory}/${key}-%C`);
  } else checkUserControlPath(own);
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
  // A host that does not answer is said so in 20 s, as on the ssh2 transport (not the kernel's 2 min).
  if ((user.get('connecttimeout')?.[0] ?? 'none') === 'none')
    args.push('-o', `ConnectTimeout=${DEFAULT_CONNECT_TIMEOUT_SECONDS}`);
  return args;
}

/** The fix for a ControlPath of the user's config that cannot be used. */
const CONTROL_PATH_FIX =
  'set ControlPath in your ssh config to a directory only you can write (for example ControlPath ~/.ssh/cm-%C), or remove the ControlPath line to let yonder keep its own.';

/**
 * The user's own ControlPath (as `ssh -G` expands it) is where the job's payload and secrets
 * go: its directory must be the user's and written by nobody else (not /tmp, sticky or not:
 * another user could bind the socket's name first and receive everything), it must be
 * writable, and what is at the path must be a socket (a directory there makes ssh disable
 * reuse without a word, and every command a new login).
 * @throws UntrustedPathError `E_UNTRUSTED_PATH`, YonderError `E_UNSAFE_VALUE`, naming the path and the fix.
 */
export function checkUserControlPath(path: string): void {
  const directory = dirname(path);
  const role = `the directory of your ssh ControlPath ${path},`;
  try {
    // Missing: ssh says so when it cannot make the socket (see loginError).
    if (!checkTrustedPath(directory, { role, type: 'directory' })) return;
  } catch (error) {
    if (!UntrustedPathError.isInstance(error)) throw error;
    throw new UntrustedPathError({
      subject: error.subject,
      path: error.path,
      owner: error.owner,
      mode: error.mode,
      message: `${error.message} Or ${CONTROL_PATH_FIX}`,
    });
  }
  try {
    accessSync(directory, constants.W_OK);
  } catch (error) {
    throw new YonderError(
      'E_UNSAFE_VALUE',
      `The directory of your ssh ControlPath ${path} cannot be written (${(error as NodeJS.ErrnoException).code ?? String(error)}), so ssh cannot keep a master connection there. Fix: ${CONTROL_PATH_FIX}`,
      { cause: error },
    );
  }
  notASocket(path, CONTROL_PATH_FIX);
}

/** Refuse something other than a socket at a ControlPath: ssh would log in afresh for every command. */
function notASocket(path: string, fix: string): void {
  let info: ReturnType<typeof lstatSync>;
  try {
    info = lstatSync(path);
  } catch {
    return; // nothing there yet: the master makes it
  }
  if (info.isSocket()) return;
  const kind = info.isDirectory()
    ? 'a directory'
    : info.isSymbolicLink()
      ? 'a symbolic link'
      : 'a file';
  throw new YonderError(
    'E_UNSAFE_VALUE',
    `The ssh ControlPath ${path} is ${kind}, not a socket, so ssh would open a new login for every command instead of reusing one. Fix: move it aside (mv ${path} ${path}.old), or ${fix}`,
  );
}

/** In yonder's own control directory, what is at a ControlPath of this host's key must be a socket (its settings file aside). */
function checkOwnControlSockets(directory: string, key: string): void {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return;
  }
  for (const name of names)
    if (name.startsWith(`${key}-`) && !name.endsWith('-settings.json'))
      notASocket(join(directory, name), 'remove it; yonder makes its sockets there itself.');
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
  const bind = /unix_listener: cannot bind to path (\S+?)(?:\.\w{16})?: (.+)/.exec(stderr);
  if (bind)
    return new YonderError(
      'E_TRANSPORT',
      `ssh cannot make its control socket ${bind[1]} (${(bind[2] as string).trim()}), so no master connection to ${host} can be kept. Fix: set XDG_RUNTIME_DIR to a directory of yours that can be written, or change the ControlPath of your ssh config to one.`,
      { data: { profile, host } },
    );
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

/**
 * Before the options of every call (the first value of an option is the one ssh keeps): a
 * control command (`-O`) that finds no master must never log in instead — which it does
 * under the user's own `ControlMaster yes` — nor ask anything.
 */
const CONTROL_COMMAND = ['-o', 'ControlMaster=no', '-o', 'BatchMode=yes'] as const;

/** Whether a master connection is up (`ssh -O check`): answered by the socket alone, no login. */
export async function masterRunning(
  ssh: SshProgram,
  args: readonly string[],
  host: string,
): Promise<boolean> {
  const result = await runSsh(
    ssh,
    [...CONTROL_COMMAND, ...args, '-O', 'check', '--', host],
    10_000,
  );
  return result.code === 0;
}

/** Close the master connection (`ssh -O exit`); false when none was up. */
export async function exitMaster(
  ssh: SshProgram,
  args: readonly string[],
  host: string,
): Promise<boolean> {
  const result = await runSsh(ssh, [...CONTROL_COMMAND, ...args, '-O', 'exit', '--', host], 10_000);
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
