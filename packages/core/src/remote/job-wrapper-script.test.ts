/** The job wrapper, run by a real sh: its own variables, the job's directory and descriptors, its times, its refusals, and where the secrets are. */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { renderEnvFile } from '../shell/render-env-file.js';
import { JOB_WRAPPER_SCRIPT } from './job-wrapper-script.js';
import { epochToIso, parseJobEnds } from './remote-scripts.js';

const scratch = mkdtempSync(join(tmpdir(), 'yonder-wrapper-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let count = 0;
/** A private job directory holding env.sh and secrets.sh as a submit leaves them. */
function jobDirectory(
  env: Record<string, string> = {},
  secrets: Record<string, string> = {},
): string {
  count += 1;
  const dir = join(scratch, `job-${count}`);
  mkdirSync(dir, { mode: 0o700 });
  if (Object.keys(env).length > 0) writeFileSync(join(dir, 'env.sh'), renderEnvFile(env));
  if (Object.keys(secrets).length > 0)
    writeFileSync(join(dir, 'secrets.sh'), renderEnvFile(secrets), { mode: 0o600 });
  return dir;
}

/** Run the wrapper on `dir` with the job `argv`, from `cwd`, to its end. */
function wrap(dir: string, argv: string[], cwd = scratch, env: NodeJS.ProcessEnv = process.env) {
  return spawnSync('sh', ['-c', JOB_WRAPPER_SCRIPT, 'yonder-job', dir, ...argv], {
    cwd,
    env,
    encoding: 'utf8',
  });
}

const read = (dir: string, name: string) => readFileSync(join(dir, name), 'utf8');

describe('the job wrapper', () => {
  it('a job’s variables never move the wrapper’s own: --env d=… and code=… change nothing of what it writes', () => {
    const elsewhere = join(scratch, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    const dir = jobDirectory(
      { d: elsewhere, code: '9', now: 'x', word: 'y', PATH: '/nonexistent', IFS: '-' },
      { TOKEN: 'secret value' },
    );
    const result = wrap(dir, ['/bin/sh', '-c', 'echo "d=$d code=$code TOKEN=$TOKEN"; exit 4']);
    expect(result.status).toBe(4);
    expect(result.stdout).toBe(`d=${elsewhere} code=9 TOKEN=secret value\n`);
    expect(read(dir, 'exit-code')).toBe('4\n');
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(existsSync(join(dir, 'secrets.sh'))).toBe(false);
  });

  it('runs the job in the directory it started in, with its PWD, even when that path moved, and leaks no descriptor', () => {
    const cwd = join(scratch, 'work dir');
    mkdirSync(cwd);
    const dir = jobDirectory();
    const moved = join(scratch, 'moved');
    const job = `mv "${cwd}" "${moved}"; echo "PWD=$PWD"; pwd -P; ls /proc/self/fd`;
    const result = wrap(dir, ['sh', '-c', job], cwd, { ...process.env, PWD: cwd });
    expect(result.status, result.stderr).toBe(0);
    const [pwd, physical, ...fds] = result.stdout.trim().split('\n');
    expect(pwd).toBe(`PWD=${cwd}`);
    expect(physical).toBe(moved);
    // stdin, stdout, stderr and the directory ls reads: nothing of the wrapper's (7, 8, 9).
    expect(fds.map(Number).filter((fd) => fd > 2 && fd < 10 && fd !== 3)).toEqual([]);
  });

  it('records its pid, the job’s pid, and the job’s own start and end; the end reads as a finished job', () => {
    const dir = jobDirectory();
    const before = Date.now();
    const result = wrap(dir, ['sh', '-c', 'sleep 0.3']);
    expect(result.status).toBe(0);
    const started = Date.parse(epochToIso(read(dir, 'started-at').trim()) as string);
    const ended = Date.parse(epochToIso(read(dir, 'ended-at').trim()) as string);
    expect(started).toBeGreaterThanOrEqual(before - 1000);
    expect(ended - started).toBeGreaterThanOrEqual(250);
    expect(read(dir, 'wrapper.pid')).toMatch(/^\d+ \d+\n$/);
    expect(read(dir, 'job.pid')).toMatch(/^\d+ \d+\n$/);
  });

  it('exit-code lines carry the times as the wrapper wrote them; a directory may hold tabs', () => {
    const ends = parseJobEnds('/a\tb\t3\t1.5\t-\n/c\t0\t1796000000.123456789\t1796000001\nnoise\n');
    expect(ends.get('/a\tb')).toEqual({ exitCode: 3, startedAt: '1970-01-01T00:00:01.500Z' });
    expect(ends.get('/c')).toEqual({
      exitCode: 0,
      startedAt: '2026-11-30T00:53:20.123Z',
      endedAt: '2026-11-30T00:53:21.000Z',
    });
    expect(epochToIso('1.2.3')).toBeUndefined();
    expect(epochToIso('-')).toBeUndefined();
  });

  it('refuses a job directory that is not private, or a link, and writes nothing there', () => {
    const open = jobDirectory();
    chmodSync(open, 0o777);
    const marker = join(scratch, 'ran');
    const target = join(scratch, 'important.txt');
    writeFileSync(target, 'precious\n');
    symlinkSync(target, join(open, '.exit-code.tmp'));
    const result = wrap(open, ['sh', '-c', `touch ${marker}`]);
    expect(result.status).toBe(125);
    expect(result.stderr).toContain('is not a private directory of yours');
    expect(existsSync(marker)).toBe(false);
    expect(readdirSync(open)).toEqual(['.exit-code.tmp']);
    expect(read(scratch, 'important.txt')).toBe('precious\n');
    const link = join(scratch, 'link-to-job');
    symlinkSync(jobDirectory(), link);
    expect(wrap(link, ['sh', '-c', `touch ${marker}`]).status).toBe(125);
    expect(existsSync(marker)).toBe(false);
  });

  it('a cancel that arrives before the job starts is its end: the job never starts, its secrets are gone', () => {
    const dir = jobDirectory({}, { TOKEN: 'x' });
    // An `id` that sends the wrapper a TERM while the wrapper is still checking its directory.
    const bin = join(scratch, 'term-bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'id'), '#!/bin/sh\nkill -TERM $PPID\nexec /usr/bin/id "$@"\n', {
      mode: 0o755,
    });
    const marker = join(scratch, 'started-anyway');
    const result = wrap(dir, ['sh', '-c', `touch ${marker}`], scratch, {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
    });
    expect(result.status).toBe(143);
    expect(read(dir, 'exit-code')).toBe('143\n');
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(dir, 'secrets.sh'))).toBe(false);
    expect(existsSync(join(dir, 'started-at'))).toBe(false);
  });

  it('holds secrets in the job’s environment only, never in its own', async () => {
    const dir = jobDirectory({}, { TOKEN: 'sekrit-in-file' });
    const env = { ...process.env };
    delete env.TOKEN;
    const child = spawn('sh', ['-c', JOB_WRAPPER_SCRIPT, 'yonder-job', dir, 'sleep', '5'], {
      env,
      stdio: 'ignore',
    });
    let jobPid = 0;
    try {
      jobPid = await new Promise<number>((resolve, reject) => {
        const deadline = Date.now() + 10_000;
        const look = () => {
          if (existsSync(join(dir, 'job.pid')) && !existsSync(join(dir, 'secrets.sh')))
            return resolve(Number(read(dir, 'job.pid').split(' ')[0]));
          if (Date.now() > deadline) return reject(new Error('the job did not start'));
          setTimeout(look, 20);
        };
        look();
      });
      const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8');
      await expect
        .poll(() => environ(jobPid).includes('TOKEN=sekrit-in-file'), { timeout: 5000 })
        .toBe(true);
      expect(environ(child.pid as number)).not.toContain('sekrit');
    } finally {
      if (jobPid > 1) process.kill(jobPid, 'SIGKILL');
      child.kill('SIGKILL');
    }
  });
});
