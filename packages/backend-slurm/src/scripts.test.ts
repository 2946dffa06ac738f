import { chmodSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalTransport } from '@yonder/core';
import { describe, expect, it } from 'vitest';
import { RUN_SLURM_COMMAND } from './scripts.js';

describe('the environment every Slurm command runs in', () => {
  it('drops SQUEUE_*, SACCT_*, SBATCH_*, SCANCEL_* and inherited SLURM_*, keeps SLURM_CONF, fixes TZ and locale', async () => {
    const result = await createLocalTransport().runScript(RUN_SLURM_COMMAND, ['', 'env'], {
      env: {
        SQUEUE_FORMAT: '%i',
        SACCT_FORMAT: 'x',
        SBATCH_HOLD: '1',
        SCANCEL_INTERACTIVE: '1',
        SLURM_JOB_ID: '42',
        SLURM_CONF: '/etc/slurm/slurm.conf',
        SLURM_TIME_FORMAT: 'relative',
        TZ: 'Europe/Paris',
        LC_ALL: 'de_DE.UTF-8',
        KEEP_ME: "multi\nline export SQUEUE_TRICK='x' value",
      },
    });
    const names = result.stdout.split('\n').map((line) => line.split('=')[0]);
    for (const gone of [
      'SQUEUE_FORMAT',
      'SACCT_FORMAT',
      'SBATCH_HOLD',
      'SCANCEL_INTERACTIVE',
      'SLURM_JOB_ID',
    ]) {
      expect(names).not.toContain(gone);
    }
    expect(result.stdout).toContain('SLURM_CONF=/etc/slurm/slurm.conf\n');
    expect(result.stdout).toContain('SLURM_TIME_FORMAT=standard\n');
    expect(result.stdout).toContain('TZ=UTC\n');
    expect(result.stdout).toContain('LC_ALL=C\n');
    expect(result.stdout).toContain("KEEP_ME=multi\nline export SQUEUE_TRICK='x' value\n");
  });

  it('runs the command from binDir by its absolute path, never a same-named one on PATH', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'yonder slurm bin '));
    writeFileSync(join(bin, 'sacct'), '#!/bin/sh\nprintf "%s|%s" "$0" "$*"\n', { mode: 0o755 });
    const transport = createLocalTransport();
    const ran = await transport.runScript(RUN_SLURM_COMMAND, [bin, 'sacct', 'a b']);
    expect(ran).toMatchObject({ exitCode: 0, stdout: `${bin}/sacct|a b` });
    // /usr/bin/squeue exists on this machine; with a binDir that lacks it, it is not run.
    const missing = await transport.runScript(RUN_SLURM_COMMAND, [bin, 'squeue', '--version']);
    expect(missing.exitCode).toBe(127);
    expect(missing.stdout).toBe('');
    const path = await transport.runScript(RUN_SLURM_COMMAND, [
      '',
      'sh',
      '-c',
      'printf %s "$PATH"',
    ]);
    expect(path.stdout).toBe(process.env.PATH);
  });
});

describe('a binDir judged by the trust rule before each command', () => {
  /** Tools the prelude and the check use, planted in binDir: each leaves a mark if run. */
  const HELPERS = ['stat', 'id', 'awk', 'getent', 'ls', 'readlink', 'tr', 'sed', 'mktemp'];

  function binDir(): { bin: string; marks: string } {
    const bin = mkdtempSync(join(tmpdir(), 'yonder slurm bin $(x) '));
    const marks = mkdtempSync(join(tmpdir(), 'yonder-marks-'));
    writeFileSync(join(bin, 'sacct'), '#!/bin/sh\nprintf "%s|%s" "$0" "$*"\n', { mode: 0o755 });
    for (const helper of HELPERS) {
      writeFileSync(join(bin, helper), `#!/bin/sh\n: > '${marks}/${helper}'\nexit 1\n`, {
        mode: 0o755,
      });
    }
    return { bin, marks };
  }

  it('runs a command of a trusted binDir, looking none of its own tools up there', async () => {
    const { bin, marks } = binDir();
    const ran = await createLocalTransport().runScript(RUN_SLURM_COMMAND, [bin, 'sacct', 'x']);
    expect(ran).toMatchObject({ exitCode: 0, stdout: `${bin}/sacct|x` });
    expect(readdirSync(marks)).toEqual([]);
  });

  it('refuses, running nothing, a binDir or a command in it that another user could change', async () => {
    const { bin, marks } = binDir();
    const transport = createLocalTransport();
    chmodSync(bin, 0o777);
    const open = await transport.runScript(RUN_SLURM_COMMAND, [bin, 'sacct', 'x']);
    expect(open).toMatchObject({ exitCode: 23, stdout: '' });
    expect(open.stderr).toContain(
      `Refusing the Slurm command of options.binDir ${bin}/sacct: ${bin} (owner `,
    );
    expect(open.stderr).toContain(`is writable by others`);
    expect(open.stderr).toContain(`Fix: chmod go-w ${bin}`);
    chmodSync(bin, 0o700);
    chmodSync(join(bin, 'sacct'), 0o757);
    const command = await transport.runScript(RUN_SLURM_COMMAND, [bin, 'sacct', 'x']);
    expect(command).toMatchObject({ exitCode: 23, stdout: '' });
    expect(command.stderr).toContain(`${bin}/sacct (owner `);
    expect(readdirSync(marks)).toEqual([]);
  });
});
