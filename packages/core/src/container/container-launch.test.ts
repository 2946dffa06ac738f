/** The argv yonder hands podman and apptainer, against expectations recorded from their documentation, and the launcher run for real with recording `podman`/`apptainer`/`id` shims in a bin directory. */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostileWords } from '@yonder/test-helpers';
import { afterAll, describe, expect, it } from 'vitest';
import type { ResolvedContainer } from '../spec/container.js';
import { type ContainerJob, containerLaunch, launcherArgv } from './container-launch.js';

const JOB: ContainerJob = {
  id: 'abc123',
  name: 'train',
  jobDir: '/home/u/.yonder/jobs/abc123',
  env: { MODE: 'fast' },
  secrets: { TOKEN: 's3cr3t $(id) "q"' },
  argv: ['python', 'run.py', '--epochs', '3'],
};

const APPTAINER: ResolvedContainer = {
  runtime: 'apptainer',
  image: '/images/pipeline.sif',
  binds: ['/data/in:/in:ro', '/data/out:/out:rw'],
  gpus: true,
  env: { OMP_NUM_THREADS: '4' },
};

const PODMAN: ResolvedContainer = {
  ...APPTAINER,
  runtime: 'podman',
  image: 'localhost/pipeline:1',
};

/**
 * apptainer's own words (`apptainer exec --help`, "Bind Paths and Mounts", "Environment and
 * Metadata"): `--containall` (contain file systems, PID, IPC and environment), `--cleanenv`,
 * `--no-home`, `--pwd DIR`, `--bind src:dest:opts` (opts ro|rw), `--nv` for NVIDIA GPUs;
 * variables into the container as `APPTAINERENV_<NAME>` in apptainer's environment.
 */
const RECORDED_APPTAINER_ARGV = [
  'exec',
  '--containall',
  '--cleanenv',
  '--no-home',
  '--pwd',
  '/home/u/.yonder/jobs/abc123',
  '--bind',
  '/home/u/.yonder/jobs/abc123:/home/u/.yonder/jobs/abc123:rw',
  '--bind',
  '/etc/resolv.conf:/etc/resolv.conf:ro',
  '--bind',
  '/data/in:/in:ro',
  '--bind',
  '/data/out:/out:rw',
  '--nv',
  '/images/pipeline.sif',
  'python',
  'run.py',
  '--epochs',
  '3',
];

/**
 * podman's (`podman-run(1)`): `--rm`, `--init`, `--env-file=FILE`, `--userns=keep-id` (rootless:
 * the user's own uid inside), `--umask`, `--pull=never`, `--label`, `--http-proxy=false`,
 * `--workdir`, `--volume=SRC:DST:ro|rw`, `--env=NAME=value`, `--device=<CDI name>`.
 */
const RECORDED_PODMAN_ARGV = [
  'run',
  '--rm',
  '--init',
  '--env-file=/dev/stdin',
  '--userns=keep-id',
  '--name=yonder-abc123-PID',
  '--umask=0027',
  '--pull=never',
  '--label=yonder.job=abc123',
  '--http-proxy=false',
  '--workdir=/home/u/.yonder/jobs/abc123',
  '--volume=/home/u/.yonder/jobs/abc123:/home/u/.yonder/jobs/abc123:rw',
  '--volume=/data/in:/in:ro',
  '--volume=/data/out:/out:rw',
  '--device=nvidia.com/gpu=all',
  'localhost/pipeline:1',
  'python',
  'run.py',
  '--epochs',
  '3',
];

const scratch = mkdtempSync(join(tmpdir(), 'yonder-launch-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * A bin directory whose `podman` and `apptainer` record their argv (NUL-separated), their
 * environment and their stdin, then run the command after the image; `id -u` answers `uid`.
 */
function shims(uid: string): { bin: string; record: string } {
  const bin = mkdtempSync(join(scratch, 'bin-'));
  const record = join(bin, 'record');
  const recorder = (skipValued: string) => `#!/bin/sh
printf '%s\\0' "$@" > '${record}.argv'
env > '${record}.env'
cat > '${record}.stdin'
shift
while [ $# -gt 0 ]; do
  case $1 in ${skipValued}) shift 2 ;; -*) shift ;; *) break ;; esac
done
shift
exec "$@"
`;
  writeFileSync(join(bin, 'podman'), recorder('--never-valued'));
  writeFileSync(join(bin, 'apptainer'), recorder('--pwd|--bind'));
  writeFileSync(join(bin, 'id'), `#!/bin/sh\n[ "$1" = -u ] && echo ${uid}\n`);
  for (const name of ['podman', 'apptainer', 'id']) chmodSync(join(bin, name), 0o755);
  return { bin, record };
}

/** Run the launcher as a wrapper would: the job's variables and secrets already in the environment. */
function launch(
  runtime: string,
  image: string,
  args: readonly string[],
  env: Record<string, string>,
  uid = '1000',
) {
  const { bin, record } = shims(uid);
  const [program, ...rest] = launcherArgv(runtime, image, args);
  const result = spawnSync(program as string, rest, {
    encoding: 'utf8',
    env: { PATH: `${bin}:/usr/bin:/bin`, YONDER_JOB_ID: JOB.id, ...env },
    input: '',
  });
  const argv = readFileSync(`${record}.argv`, 'utf8').split('\0').slice(0, -1);
  return {
    result,
    argv,
    env: readFileSync(`${record}.env`, 'utf8'),
    stdin: readFileSync(`${record}.stdin`, 'utf8'),
  };
}

describe('apptainer argv', () => {
  it('is the recorded one: contained, clean, no home, the job directory and binds, --nv', () => {
    const built = containerLaunch(APPTAINER, JOB);
    expect(built.check).toEqual([
      'apptainer',
      '/images/pipeline.sif',
      '2',
      '/data/in',
      '/data/out',
    ]);
    const ran = launch(
      'apptainer',
      '/images/pipeline.sif',
      [...built.args.slice(0, -4), 'sh', '-c', 'exit 0'],
      {
        ...built.env,
        ...built.secrets,
      },
    );
    expect(ran.result.status).toBe(0);
    expect(ran.argv).toEqual([...RECORDED_APPTAINER_ARGV.slice(0, -4), 'sh', '-c', 'exit 0']);
  });

  it('gets the variables and secrets as APPTAINERENV_, and yonder’s marker only inside', () => {
    const built = containerLaunch(APPTAINER, JOB);
    expect(built.env).toMatchObject({
      APPTAINERENV_MODE: 'fast',
      APPTAINERENV_OMP_NUM_THREADS: '4',
      APPTAINERENV_YONDER_JOB_ID: 'abc123',
    });
    expect(built.secrets).toEqual({ APPTAINERENV_TOKEN: JOB.secrets.TOKEN });
    const ran = launch('apptainer', APPTAINER.image, [...built.args.slice(0, -4), 'true'], {
      ...built.env,
      ...built.secrets,
    });
    expect(ran.env).toContain(`APPTAINERENV_TOKEN=${JOB.secrets.TOKEN}`);
    expect(ran.env).not.toMatch(/^YONDER_JOB_ID=/m);
    expect(ran.argv.join(' ')).not.toContain('s3cr3t');
  });

  it('takes no GPU flag without gpus', () => {
    const built = containerLaunch({ ...APPTAINER, gpus: false }, JOB);
    expect(built.args).not.toContain('--nv');
  });
});

describe('podman argv', () => {
  const run = (uid: string, argv = ['sh', '-c', 'exit 0']) => {
    const built = containerLaunch(PODMAN, { ...JOB, argv });
    return launch('podman', PODMAN.image, built.args, { ...built.env, ...built.secrets }, uid);
  };

  it('is the recorded one, rootless: keep-id, the umask, never a pull, the binds, the variables', () => {
    const built = containerLaunch(PODMAN, JOB);
    expect(built.check).toEqual(['podman', 'localhost/pipeline:1', '2', '/data/in', '/data/out']);
    const { bin, record } = shims('1000');
    const [program, ...rest] = launcherArgv('podman', PODMAN.image, [
      ...built.args.slice(0, -4),
      'true',
    ]);
    const result = spawnSync(
      'sh',
      ['-c', 'umask 0027; exec "$@"', 'umask', program as string, ...rest],
      {
        encoding: 'utf8',
        env: { PATH: `${bin}:/usr/bin:/bin`, ...built.env, ...built.secrets },
      },
    );
    expect(result.stderr).toBe('');
    const argv = readFileSync(`${record}.argv`, 'utf8')
      .split('\0')
      .slice(0, -1)
      .map((word) => word.replace(/^(--name=yonder-abc123-)\d+$/, '$1PID'));
    expect(argv).toEqual([...RECORDED_PODMAN_ARGV.slice(0, -4), 'true']);
  });

  it('drops keep-id as root', () => {
    const ran = run('0');
    expect(ran.argv).not.toContain('--userns=keep-id');
    expect(ran.argv.slice(0, 4)).toEqual(['run', '--rm', '--init', '--env-file=/dev/stdin']);
  });

  it('hands the secrets and the variables on stdin, never in its argv (/proc/*/cmdline) or environment, nor yonder’s marker', () => {
    const ran = run('1000');
    expect(ran.stdin).toBe(
      [
        `TOKEN=${JOB.secrets.TOKEN}`,
        'OMP_NUM_THREADS=4',
        'MODE=fast',
        'YONDER_JOB_ID=abc123',
        'YONDER_JOB_NAME=train',
        `YONDER_JOB_DIR=${JOB.jobDir}`,
        '',
      ].join('\n'),
    );
    expect(ran.argv.join('\n')).not.toContain('s3cr3t');
    expect(ran.argv.join('\n')).not.toMatch(/fast|OMP_NUM_THREADS|--env=/);
    expect(ran.env).not.toMatch(/^(YONDER_ENV_|MODE=|OMP_NUM_THREADS=)/m);
    expect(ran.env).not.toContain('s3cr3t');
    expect(ran.env).not.toMatch(/^YONDER_(JOB_ID|SECRET_TOKEN)=/m);
    // The marker a cancel finds the container's processes by reaches them on the pipe.
    expect(ran.stdin).toContain('\nYONDER_JOB_ID=abc123\n');
  });

  it('keeps every argv word literal and passes the job’s exit status on', () => {
    const canary = join(scratch, 'canary');
    const words = hostileWords(canary);
    const ran = run('1000', ['sh', '-c', 'printf "%s\\n" "$#"; exit 7', 'sh', ...words]);
    expect(ran.result.status).toBe(7);
    expect(ran.result.stdout).toBe(`${words.length}\n`);
    expect(ran.argv.slice(-words.length)).toEqual(words);
    expect(existsSync(canary)).toBe(false);
  });

  it('judges each bind source where it leads right before the start: a team directory swapped for another user’s link to ~/.ssh starts nothing', () => {
    const { bin, record } = shims('1000');
    const keys = join(scratch, 'dot-ssh');
    mkdirSync(keys, { mode: 0o700 });
    const results = join(scratch, 'team results $(x)');
    symlinkSync(keys, results);
    const other = process.getuid?.() === 2002 ? 2003 : 2002;
    lchownSync(results, other, other);
    const built = containerLaunch(
      { ...PODMAN, binds: [`${results}:/out:rw`] },
      { ...JOB, argv: ['true'] },
    );
    const [program, ...rest] = launcherArgv('podman', 'img', built.args);
    const result = spawnSync(program as string, rest, {
      encoding: 'utf8',
      env: { PATH: `${bin}:/usr/bin:/bin`, ...built.env, ...built.secrets },
    });
    expect(result.status).toBe(126);
    expect(result.stderr).toContain(
      `Refusing the container bind source ${results}: ${results} (owner `,
    );
    expect(() => readFileSync(`${record}.argv`)).toThrow();
  });

  it('refuses a secret name that is not a variable name, running nothing', () => {
    const { bin, record } = shims('1000');
    const [program, ...rest] = launcherArgv('podman', 'img', ['1', 'A;touch x', '0', 'true']);
    const result = spawnSync(program as string, rest, {
      encoding: 'utf8',
      env: { PATH: `${bin}:/usr/bin:/bin` },
    });
    expect(result.status).toBe(126);
    expect(result.stderr).toContain('is not a variable name');
    expect(() => readFileSync(`${record}.argv`)).toThrow();
  });

  it('gives a CDI device by name, and no device without gpus', () => {
    expect(containerLaunch({ ...PODMAN, gpus: 'nvidia.com/gpu=0' }, JOB).args).toContain(
      '--device=nvidia.com/gpu=0',
    );
    expect(
      containerLaunch({ ...PODMAN, gpus: false }, JOB).args.some((word) =>
        word.startsWith('--device'),
      ),
    ).toBe(false);
  });
});
