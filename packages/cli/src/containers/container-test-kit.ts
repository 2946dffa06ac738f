/**
 * What the container tests share: the podman test image (scripts/containers.sh), podman asked
 * as a given user, and the built CLI run as root or as the unprivileged victim (rootless
 * podman) behind one interface.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CliResult,
  onCleanup,
  type Raw,
  REPOSITORY_ROOT,
  requireCliBuild,
  requireUsers,
  runCli,
  type TestUser,
  yonderAs,
} from '@yonder/test-helpers';

/** The image scripts/containers.sh imports for every test user: busybox and /etc/yonder-image. */
export const TEST_IMAGE = 'localhost/yonder-test-busybox';
/** What /etc/yonder-image holds in it. */
export const IMAGE_MARKER = 'hello-from-image';
const SCRIPT = join(REPOSITORY_ROOT, 'scripts/containers.sh');

/** Fail (never skip) when podman or the test image is missing, naming the command that sets them up. */
export function requirePodman(): void {
  const status = spawnSync('bash', [SCRIPT, 'status'], { stdio: 'ignore', timeout: 120_000 });
  if (status.status !== 0)
    throw new Error(
      `podman or its test image ${TEST_IMAGE} is missing. Set them up as root with: bash scripts/containers.sh`,
    );
}

/** `podman ARGS` as `user` (null: root), to its end; throws when it fails. */
export function podmanAs(user: string | null, args: readonly string[]): string {
  const argv =
    user === null ? ['podman', ...args] : ['runuser', '-u', user, '--', 'podman', ...args];
  const home = user === null ? '/root' : join('/home', user);
  const result = spawnSync(argv[0] as string, argv.slice(1), {
    cwd: '/',
    encoding: 'utf8',
    env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: home },
    timeout: 60_000,
  });
  if (result.status !== 0)
    throw new Error(
      `podman ${args.join(' ')} as ${user ?? 'root'}: ${result.error?.message ?? result.stderr.trim()}`,
    );
  return result.stdout;
}

/** The ids of `user`'s running containers labelled as the job's. */
export function runningContainers(user: string | null, jobId: string): string[] {
  return podmanAs(user, ['ps', '--quiet', '--filter', `label=yonder.job=${jobId}`])
    .split('\n')
    .filter(Boolean);
}

/** The image id podman gives the test image, as `user` sees it. */
export function imageId(user: string | null): string {
  return `sha256:${podmanAs(user, ['image', 'inspect', '--format', '{{.Id}}', TEST_IMAGE]).trim()}`;
}

/** Every process's command line and environment that holds `text`, as `pid: command`. */
export function processesHolding(text: string): { cmdline: string[]; environ: string[] } {
  const found = { cmdline: [] as string[], environ: [] as string[] };
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    for (const kind of ['cmdline', 'environ'] as const) {
      try {
        const value = readFileSync(`/proc/${pid}/${kind}`, 'latin1');
        if (value.includes(text)) {
          const command = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ');
          found[kind].push(`${pid}: ${command.slice(0, 120)}`);
        }
      } catch {
        /* gone, or not ours to read */
      }
    }
  }
  return found;
}

/** The CLI as one user: its ledger, a private scratch directory, and podman as that user. */
export interface ContainerUser {
  readonly label: string;
  /** The user's name for runuser, or null for root. */
  readonly name: string | null;
  readonly state: string;
  /** A new directory of the user's (0700) under their scratch directory. */
  dir(name: string): string;
  yonder(args: readonly string[], env?: Record<string, string>): Promise<CliResult>;
  yonderJson(
    args: readonly string[],
    env?: Record<string, string>,
  ): Promise<CliResult & { doc: Raw }>;
}

function withJson(args: readonly string[]): string[] {
  const split = args.indexOf('--');
  return split < 0
    ? [...args, '--json']
    : [...args.slice(0, split), '--json', ...args.slice(split)];
}

function parsed(result: CliResult, args: readonly string[]): CliResult & { doc: Raw } {
  try {
    return { ...result, doc: JSON.parse(result.stdout) };
  } catch {
    throw new Error(
      `yonder ${args.join(' ')} printed no JSON (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}

/** Root, running the built CLI in this process's environment (less the user's config). */
export function rootUser(): ContainerUser {
  requireCliBuild();
  const base = mkdtempSync(join(tmpdir(), 'yonder-containers-'));
  onCleanup(() => rmSync(base, { recursive: true, force: true }));
  const state = join(base, 'state');
  mkdirSync(state, { mode: 0o700 });
  const yonder = (args: readonly string[], env: Record<string, string> = {}) =>
    runCli(args, { state, env, timeoutMs: 120_000 });
  return {
    label: 'root',
    name: null,
    state,
    dir: (name) => {
      const dir = join(base, name);
      mkdirSync(dir, { mode: 0o700 });
      return dir;
    },
    yonder,
    yonderJson: async (args, env) => parsed(await yonder(withJson(args), env), args),
  };
}

/** The unprivileged victim: rootless podman, the CLI run with a clean environment. */
export function victimUser(): ContainerUser {
  const { victim } = requireUsers();
  const base = mkdtempSync(join(victim.home, 'yonder-containers-'));
  chownSync(base, victim.uid, victim.gid);
  onCleanup(() => rmSync(base, { recursive: true, force: true }));
  const own = (path: string, user: TestUser) => {
    mkdirSync(path, { mode: 0o700 });
    chownSync(path, user.uid, user.gid);
    return path;
  };
  const state = own(join(base, 'state'), victim);
  const yonder = (args: readonly string[], env: Record<string, string> = {}) =>
    yonderAs(victim, state, args, env, 120_000);
  return {
    label: victim.name,
    name: victim.name,
    state,
    dir: (name) => own(join(base, name), victim),
    yonder,
    yonderJson: async (args, env) => parsed(await yonder(withJson(args), env), args),
  };
}
