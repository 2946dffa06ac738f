/** Jobs in containers on the test cluster: real podman inside the batch script (binds, secrets, cancel, a refusal at submit), and the exact apptainer argv the batch script runs, recorded by an `apptainer` shim on the job's PATH. */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { YonderError } from '@yonder/core';
import { until } from '@yonder/test-helpers';
import { afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { requireCluster } from './test-support/cluster.js';
import { releaseHeldJobs, shimmedSlurm } from './test-support/shimmed-slurm.js';

const IMAGE = 'localhost/yonder-test-busybox';

beforeAll(() => {
  requireCluster();
  const status = spawnSync('bash', [
    new URL('../../../scripts/containers.sh', import.meta.url).pathname,
    'status',
  ]);
  if (status.status !== 0)
    throw new Error(
      `podman or its test image ${IMAGE} is missing. Set them up as root with: bash scripts/containers.sh`,
    );
});
afterEach(() => releaseHeldJobs());

function podmanPs(jobId: string): string[] {
  const listed = spawnSync('podman', ['ps', '--quiet', '--filter', `label=yonder.job=${jobId}`], {
    encoding: 'utf8',
    cwd: '/',
  });
  return listed.stdout.split('\n').filter(Boolean);
}

describe('podman inside the Slurm batch script', () => {
  it('runs the job inside with its binds and secrets, records the image id, and cancel stops it', async () => {
    const { manager } = await shimmedSlurm();
    const data = mkdtempSync(join(tmpdir(), "yonder slurm in 'q' $(x) "));
    writeFileSync(join(data, 'input'), 'cluster-input\n');
    const out = mkdtempSync(join(tmpdir(), 'yonder-slurm-out-'));
    const job = await manager.submit(
      {
        argv: ['sh', '-c', 'cat /etc/yonder-image /in/input; echo "$TOKEN"; echo ok > /out/r'],
        secrets: { TOKEN: 'batch $(secret) "q"' },
        container: {
          runtime: 'podman',
          image: IMAGE,
          binds: [`${data}:/in`, `${out}:/out:rw`],
        },
      },
      { profile: 'hpc' },
    );
    const {
      jobs: [done],
    } = await manager.wait([job.id], { timeoutMs: 120_000 });
    expect(done?.state).toBe('succeeded');
    const log = await manager.logs(job.id);
    expect(log.chunk.data.toString()).toBe(
      'hello-from-image\ncluster-input\nbatch $(secret) "q"\n',
    );
    expect(readFileSync(join(out, 'r'), 'utf8')).toBe('ok\n');
    const id = spawnSync('podman', ['image', 'inspect', '--format', '{{.Id}}', IMAGE], {
      encoding: 'utf8',
    }).stdout.trim();
    expect(done?.containerImage?.id).toBe(`sha256:${id}`);

    const ready = join(out, 'ready');
    const long = await manager.submit(
      {
        argv: ['sh', '-c', 'echo up > /out/ready; exec sleep 300'],
        container: { runtime: 'podman', image: IMAGE, binds: [`${out}:/out:rw`] },
      },
      { profile: 'hpc' },
    );
    await until(() => existsSync(ready), 120_000, 'the Slurm job to start in its container');
    expect(podmanPs(long.id)).toHaveLength(1);
    const [cancelled] = await manager.cancel([long.id], { waitMs: 120_000 });
    expect(cancelled?.state).toBe('cancelled');
    await until(() => podmanPs(long.id).length === 0, 60_000, 'the container to be gone');
    // Nothing of runc's "container not running" is in the job's log. (Open: slurmstepd signals
    // every process of the step, podman too, whatever its process group, and podman's
    // forwarding of the SIGCONT can still add a `level=error … forwarding signal 18` line.)
    const cancelledLog = (await manager.logs(long.id, { all: true })).chunk.data.toString();
    expect(cancelledLog).not.toContain('container not running');
  }, 300_000);

  it('refuses at submit a bind source the login node does not have, naming it', async () => {
    const { manager } = await shimmedSlurm();
    const error = await manager
      .submit(
        {
          argv: ['true'],
          container: { runtime: 'podman', image: IMAGE, binds: ['/nonexistent/yonder:/in'] },
        },
        { profile: 'hpc' },
      )
      .catch((caught: unknown) => caught);
    expect(YonderError.isInstance(error) && error.code).toBe('E_SUBMIT_REFUSED');
    expect(String((error as Error).message)).toContain(
      'container.binds.0: the source /nonexistent/yonder does not exist on the target',
    );
  });
});

describe('apptainer inside the Slurm batch script (apptainer is not in Debian 12: a shim)', () => {
  it('runs exactly the recorded argv, with the variables as APPTAINERENV_ and the marker only inside', async () => {
    const { manager, profile } = await shimmedSlurm();
    const record = mkdtempSync(join(tmpdir(), 'yonder-apptainer-record-'));
    // The shim on the submit's PATH, which the job's on the node holds too (sbatch exports the
    // submit's environment). Not in binDir: only the Slurm commands are looked up there.
    const runtimes = mkdtempSync(join(tmpdir(), 'yonder-apptainer-bin-'));
    writeFileSync(
      join(runtimes, 'apptainer'),
      `#!/bin/sh
printf '%s\\0' "$@" > '${record}/argv'
env | grep -E '^(APPTAINERENV_|YONDER_)' | sort > '${record}/env'
shift
while [ $# -gt 0 ]; do
  case $1 in --pwd|--bind) shift 2 ;; -*) shift ;; *) break ;; esac
done
shift
exec "$@"
`,
    );
    chmodSync(join(runtimes, 'apptainer'), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${runtimes}:${path}`;
    onTestFinished(() => {
      process.env.PATH = path;
    });
    const image = join(mkdtempSync(join(tmpdir(), 'yonder-sif-')), 'pipeline.sif');
    writeFileSync(image, 'not really an image');
    const data = mkdtempSync(join(tmpdir(), 'yonder-apptainer-data-'));
    const job = await manager.submit(
      {
        argv: ['sh', '-c', 'echo ran "$1"', 'sh', "a 'b' $(c)"],
        env: { MODE: 'x y' },
        secrets: { TOKEN: 'app-secret' },
        container: { runtime: 'apptainer', image, binds: [`${data}:/data:rw`], gpus: true },
      },
      { profile: 'hpc' },
    );
    const {
      jobs: [done],
    } = await manager.wait([job.id], { timeoutMs: 120_000 });
    expect(done?.state).toBe('succeeded');
    expect((await manager.logs(job.id)).chunk.data.toString()).toBe("ran a 'b' $(c)\n");
    const jobDir = `${profile.workdir}/${job.id}`;
    expect(readFileSync(join(record, 'argv'), 'utf8').split('\0').slice(0, -1)).toEqual([
      'exec',
      '--containall',
      '--cleanenv',
      '--no-home',
      '--pwd',
      jobDir,
      '--bind',
      `${jobDir}:${jobDir}:rw`,
      '--bind',
      '/etc/resolv.conf:/etc/resolv.conf:ro',
      '--bind',
      `${data}:/data:rw`,
      '--nv',
      image,
      'sh',
      '-c',
      'echo ran "$1"',
      'sh',
      "a 'b' $(c)",
    ]);
    expect(readFileSync(join(record, 'env'), 'utf8')).toBe(
      [
        `APPTAINERENV_MODE=x y`,
        'APPTAINERENV_TOKEN=app-secret',
        `APPTAINERENV_YONDER_JOB_DIR=${jobDir}`,
        `APPTAINERENV_YONDER_JOB_ID=${job.id}`,
        'APPTAINERENV_YONDER_JOB_NAME=sh',
        '',
      ].join('\n'),
    );
    const sum = spawnSync('sha256sum', [image], { encoding: 'utf8' }).stdout.split(' ')[0];
    expect(done?.containerImage).toEqual({ id: `sha256:${sum}`, digest: `sha256:${sum}` });
  });
});
