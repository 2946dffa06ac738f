import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireCliBuild, requireSlurm, runCli } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let work: string;

function yonder(args: string[]) {
  return runCli(args, { state, cwd: work });
}

beforeAll(() => {
  requireCliBuild();
  requireSlurm();
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-slurm-'));
  work = mkdtempSync(join(tmpdir(), 'yonder cli slurm '));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('yonder with a Slurm profile, as a new user would', () => {
  it('profile add → check → submit → wait → logs → cancel', async () => {
    const add = await yonder([
      'profile',
      'add',
      'hpc',
      '--backend',
      'slurm',
      '--workdir',
      join(work, 'jobs'),
      '--set',
      'requeue=false',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const check = await yonder(['profile', 'check', 'hpc']);
    expect(check.code, check.stdout).toBe(0);
    expect(check.stdout).toContain('slurmVersion = "22.05');
    expect(check.stdout).toContain('accounting = true');

    const submit = await yonder([
      'submit',
      '--profile',
      'hpc',
      '--name',
      'cli test',
      '--time',
      '5',
      '--memory',
      '100M',
      '--',
      'sh',
      '-c',
      'echo "from slurm: $1"; exit 2',
      'sh',
      '$(not run)',
    ]);
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    const wait = await yonder(['wait', id, '--timeout', '120']);
    expect(wait.code, wait.stderr).toBe(2);
    expect((await yonder(['logs', id])).stdout).toBe('from slurm: $(not run)\n');
    const status = JSON.parse((await yonder(['status', id, '--json'])).stdout);
    expect(status.result[0]).toMatchObject({
      backend: 'slurm',
      state: 'failed',
      exitCode: 2,
      nativeState: 'FAILED',
      failureKind: 'application',
    });

    // The documented spaced form: the word after --scheduler-option is its value, dashes and all.
    const spaced = await yonder([
      'submit',
      '--profile',
      'hpc',
      '--scheduler-option',
      '--job-name',
      '--',
      'true',
    ]);
    expect(spaced.code).toBe(1);
    expect(spaced.stderr).toMatch(/schedulerOptions(\.0)?: .*--job-name/);
    const nice = await yonder([
      'submit',
      '--profile',
      'hpc',
      '--scheduler-option',
      '--nice=10',
      '--',
      'sh',
      '-c',
      'squeue -h -j "$SLURM_JOB_ID" -o %y',
    ]);
    expect(nice.code, nice.stderr).toBe(0);
    const niceId = nice.stdout.trim();
    expect((await yonder(['wait', niceId, '--timeout', '120'])).code).toBe(0);
    expect((await yonder(['logs', niceId])).stdout.trim()).toBe('10');

    const long = (await yonder(['submit', '--profile', 'hpc', '--', 'sleep', '300'])).stdout.trim();
    const cancel = await yonder(['cancel', long]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toContain(`${long} cancelled`);

    const bad = await yonder([
      'profile',
      'add',
      'bad',
      '--backend',
      'slurm',
      '--set',
      'export=SOME',
      '--set',
      'nosuch=1',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('options.export');
    expect(bad.stderr).toContain('options.nosuch');
  }, 240_000);
});

describe('a Slurm profile’s defaults', () => {
  it('reach sbatch unless the submit says otherwise; rm removes the job directory', async () => {
    const add = await yonder([
      'profile',
      'add',
      'hpc-defaults',
      '--backend',
      'slurm',
      '--workdir',
      join(work, 'default-jobs'),
      '--set',
      'partition=short',
      // The test cluster's short partition allows a minute.
      '--time',
      '1',
      '--scheduler-option',
      '--nice=5',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const asked = 'squeue -h -j "$SLURM_JOB_ID" -o "%P %l %y"';
    const run = async (flags: string[]): Promise<{ id: string; seen: string }> => {
      const submit = await yonder([
        'submit',
        '--profile',
        'hpc-defaults',
        ...flags,
        '--',
        'sh',
        '-c',
        asked,
      ]);
      expect(submit.code, submit.stderr).toBe(0);
      const id = submit.stdout.trim();
      expect((await yonder(['wait', id, '--timeout', '120'])).code).toBe(0);
      return { id, seen: (await yonder(['logs', id])).stdout.trim() };
    };
    expect((await run([])).seen).toBe('short 1:00 5');
    // The submit's own values win, field by field; its scheduler options come after the profile's.
    const own = await run(['--partition', 'debug', '--time', '3', '--scheduler-option=--nice=9']);
    expect(own.seen).toBe('debug 3:00 9');
    const [job] = JSON.parse((await yonder(['status', own.id, '--json'])).stdout).result;
    expect(job.spec).toMatchObject({
      resources: { partition: 'debug', time: '3' },
      schedulerOptions: ['--nice=5', '--nice=9'],
    });
    expect(existsSync(job.data.jobDir)).toBe(true);
    const rm = await yonder(['rm', own.id]);
    expect(rm.code, rm.stderr).toBe(0);
    expect(existsSync(job.data.jobDir)).toBe(false);
  }, 240_000);
});

describe('a --secret on Slurm', () => {
  it('reaches the job but not the environment Slurm saves with it', async () => {
    const secret = `s3cr3t-${Date.now()}`;
    const add = await yonder([
      'profile',
      'add',
      'hpc-secret',
      '--backend',
      'slurm',
      '--workdir',
      join(work, 'secret-jobs'),
    ]);
    expect(add.code, add.stderr).toBe(0);
    const run = (args: string[]) =>
      runCli(args, { state, cwd: work, env: { YONDER_TEST_TOKEN: secret } });
    // Held for an hour, so Slurm keeps its saved environment where we can read it.
    const held = await run([
      'submit',
      '--profile',
      'hpc-secret',
      '--secret',
      'YONDER_TEST_TOKEN',
      '--scheduler-option=--begin=now+1hour',
      '--',
      'true',
    ]);
    expect(held.code, held.stderr).toBe(0);
    const heldId = held.stdout.trim();
    const externalId = (await yonder(['status', heldId, '--format', '{externalId}'])).stdout.trim();
    const saved = readdirSync('/var/lib/slurm/slurmctld')
      .filter((name) => name.startsWith('hash.'))
      .map((hash) => join('/var/lib/slurm/slurmctld', hash, `job.${externalId}`, 'environment'))
      .filter((path) => existsSync(path));
    expect(saved).toHaveLength(1);
    expect(readFileSync(saved[0] as string).includes(secret)).toBe(false);
    await yonder(['cancel', heldId]);

    const job = await run([
      'submit',
      '--profile',
      'hpc-secret',
      '--secret',
      'YONDER_TEST_TOKEN',
      '--',
      'sh',
      '-c',
      'printf %s "$YONDER_TEST_TOKEN"',
    ]);
    const id = job.stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '120'])).code).toBe(0);
    expect((await yonder(['logs', id])).stdout).toBe(secret);
  }, 180_000);
});

describe('submit --batch to Slurm', () => {
  it('prints the id of each job submitted and none of a job that was not, naming it and why', async () => {
    const add = await yonder([
      'profile',
      'add',
      'hpc-batch',
      '--backend',
      'slurm',
      '--workdir',
      join(work, 'batch-jobs'),
      '--scheduler-option',
      '--hold',
    ]);
    expect(add.code, add.stderr).toBe(0);
    // Line 2 has an argument past what one command line holds (E2BIG): it alone is refused.
    const batch = join(work, 'batch.jsonl');
    writeFileSync(
      batch,
      [
        { argv: ['echo', "it's $(one)"] },
        { argv: ['echo', 'x'.repeat(200 * 1024)] },
        { argv: ['echo', '-n', 'three\nlines'] },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n'),
    );
    const result = await yonder(['submit', '--batch', batch, '--profile', 'hpc-batch']);
    expect(result.code).toBe(1);
    const ids = result.stdout.trim().split('\n');
    expect(ids).toHaveLength(2);
    const refused =
      /line 2: job ([0-9a-f]{12}) was not submitted: the job's arguments \(201 KiB\) are too long for one command on the target/.exec(
        result.stderr,
      );
    expect(refused, result.stderr).not.toBeNull();
    expect(ids).not.toContain(refused?.[1]);
    const listed = JSON.parse((await yonder(['status', ...ids, '--json'])).stdout).result;
    expect(listed.map((job: { state: string }) => job.state)).toEqual(['pending', 'pending']);
    expect((await yonder(['cancel', ...ids])).code).toBe(0);
  }, 240_000);
});
