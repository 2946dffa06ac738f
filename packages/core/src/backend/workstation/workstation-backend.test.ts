import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readBootId, readProcessStat } from '../../process/process-identity.js';
import type { BackendContextV1, BackendJobV1 } from '../../spec/backend/v1/backend-v1.js';
import type { Profile } from '../../spec/profile.js';
import type { TransportV1 } from '../../spec/transport/v1/transport-v1.js';
import { createLocalTransport } from '../../transport/local-transport.js';
import { createLocalBackend } from '../local/local-backend.js';
import { createWorkstationBackend } from './workstation-backend.js';
import { WORKSTATION_SUBMIT_SCRIPT } from './workstation-scripts.js';
import { TEST_PROFILE, testRequest } from './workstation-test-requests.js';

/** A uid that is not this process's: the owner of what "another user" planted. */
const OTHER_UID = (process.getuid?.() ?? 0) === 2002 ? 2003 : 2002;

/** A user as the trust check names them: "name (uid N)", or "uid N" without a name. */
function userName(uid = process.getuid?.() ?? 0): string {
  const name = spawnSync('id', ['-nu', String(uid)], { encoding: 'utf8' }).stdout.trim();
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

let scratch: string;
let scripts: number;
let context: BackendContextV1;
const children: ChildProcess[] = [];
/** Process groups of jobs the tests started, killed after each test. */
const groups: number[] = [];
const profile: Profile = TEST_PROFILE;

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), 'yonder-workstation-'));
  scripts = 0;
  const local = createLocalTransport();
  const counting: TransportV1 = {
    ...local,
    runScript: (script, args, options) => {
      scripts += 1;
      return local.runScript(script, args, options);
    },
  };
  context = { transport: counting, options: {}, stateDirectory: scratch };
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const pid of groups.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

const request = testRequest;

function asJob(id: string, data: BackendJobV1['data']): BackendJobV1 {
  return {
    id,
    name: 'test',
    externalId: String(data.pid ?? ''),
    state: 'running',
    createdAt: new Date().toISOString(),
    cancelRequested: false,
    profile,
    options: {},
    data,
  };
}

/** A process that is not a job: its own group, so a group signal would reach it. */
function bystander(): { pid: number; startTime: string } {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  children.push(child);
  const pid = child.pid as number;
  return { pid, startTime: readProcessStat(pid)?.startTime as string };
}

function alive(pid: number): boolean {
  const stat = readProcessStat(pid);
  return stat !== null && stat.state !== 'Z';
}

describe('the workstation factory', () => {
  it('declares what it is given, and the grace is injectable', () => {
    expect(createLocalBackend().capabilities).toMatchObject({
      host: 'none',
      submitGraceSeconds: 30,
      recoverSubmit: true,
    });
    expect(createLocalBackend().capabilities.transport).toBeUndefined();
    expect(createLocalBackend({ submitGraceSeconds: 2 }).capabilities.submitGraceSeconds).toBe(2);
    const remote = createWorkstationBackend({
      id: 'box',
      host: 'required',
      transport: 'ssh',
      submitGraceSeconds: 90,
    });
    expect(remote.capabilities).toMatchObject({ host: 'required', transport: 'ssh' });
    expect(remote.targetKey({ name: 'a', backend: 'box', host: 'h1' }, {})).toBe('box:h1');
    expect(createLocalBackend().validateProfile({ ...profile, host: 'h1' })).toEqual([
      { path: 'host', message: 'the local backend runs on this machine; remove the host' },
    ]);
  });
});

describe('submit', () => {
  it('a submit whose working directory does not exist is refused (the submitter’s error) and leaves no file', async () => {
    const backend = createLocalBackend();
    await expect(
      backend.submit(request({ cwd: join(scratch, 'nowhere'), secrets: { TOKEN: 'x' } }), context),
    ).rejects.toMatchObject({
      code: 'E_SUBMIT_REFUSED',
      message: expect.stringMatching(/^The job's working directory .*nowhere does not exist on /),
    });
    const runs = join(scratch, 'runs');
    expect(existsSync(runs) ? readdirSync(runs) : []).toEqual([]);
  });

  it('a payload cut short (its sender died while sending it) starts nothing and leaves nothing', async () => {
    const workdir = join(scratch, 'runs');
    const marker = join(scratch, 'ran');
    const result = await context.transport.runScript(
      WORKSTATION_SUBMIT_SCRIPT,
      [workdir, 'cccccccccccc', '40:0:0', '', '', '', '0', 'sh', '-c', 'echo ran > "$0"', marker],
      { input: "export YONDER_JOB_ID='ccc" },
    );
    expect(result.exitCode).toBe(18);
    expect(result.stderr).toContain('incomplete');
    expect(readdirSync(workdir)).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it('a submit whose submitter died (its output pipes closed) cleans up before it dies of SIGPIPE', async () => {
    const workdir = join(scratch, 'runs');
    mkdirSync(workdir);
    const child = spawn(
      'sh',
      [
        '-c',
        WORKSTATION_SUBMIT_SCRIPT,
        'x',
        workdir,
        'dddddddddddd',
        '40:0:0',
        '',
        '',
        '',
        '0',
        'true',
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.stdin?.end('export A=1\n');
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
      child.on('exit', (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
    );
    expect(code === 18 || signal === 'SIGPIPE').toBe(true);
    expect(readdirSync(workdir)).toEqual([]);
  });

  it('refuses a work directory that is another user’s symlink, and writes nothing through it', async () => {
    const target = join(scratch, 'elsewhere');
    mkdirSync(target);
    const link = join(scratch, 'runs');
    symlinkSync(target, link);
    lchownSync(link, OTHER_UID, OTHER_UID);
    const backend = createLocalBackend();
    await expect(backend.submit(request(), context)).rejects.toMatchObject({
      code: 'E_UNTRUSTED_PATH',
      message: `Refusing the work directory ${link}: ${link} (owner ${userName(OTHER_UID)}, mode 0777) is a symbolic link made by another user, so another user could change what yonder reads or runs there. Fix: remove it (rm ${link}) and use a path of your own.`,
    });
    expect(readdirSync(target)).toEqual([]);
    const report = await backend.probe(profile, context);
    expect(report.ok).toBe(false);
    expect(report.problems.join()).toContain('cannot be used');
    // A link of the user's own to a directory of theirs is followed, as the kernel would.
    lchownSync(link, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
    const result = await backend.submit(request({ argv: ['true'] }), context);
    expect(readdirSync(target)).toEqual([String(result.data.jobDir).split('/').pop()]);
    // Until its wrapper has recorded the end, it still writes there (ci20: the clean-up after
    // the test met a file written meanwhile).
    await expect
      .poll(() => existsSync(join(String(result.data.jobDir), 'exit-code')), { timeout: 10_000 })
      .toBe(true);
  });

  it('refuses a work directory its group can write, or one above it without the sticky bit, before making anything', async () => {
    const shared = join(scratch, 'project');
    mkdirSync(shared, { mode: 0o700 });
    // A group other users are in (a group of the user's alone is the user's: isSoloGroup).
    chownSync(shared, process.getuid?.() ?? 0, OTHER_UID);
    chmodSync(shared, 0o775);
    const workdir = join(shared, 'runs');
    const backend = createLocalBackend();
    const profileIn = { ...profile, workdir };
    await expect(backend.submit(request({ profile: profileIn }), context)).rejects.toMatchObject({
      code: 'E_UNTRUSTED_PATH',
      message: expect.stringContaining(
        `${shared} (owner ${userName()}, mode 0775) is writable by its group, so another user could change what yonder reads or runs there. Fix: chmod go-w ${shared}`,
      ),
    });
    expect(readdirSync(shared)).toEqual([]);
    // Sticky, as /tmp: others cannot move what is the user's in it.
    chmodSync(shared, 0o1777);
    await backend.submit(request({ profile: profileIn }), context);
    expect(statSync(workdir).mode & 0o7777).toBe(0o700);
    // The work directory itself must be the user's own and written by nobody else.
    chownSync(workdir, process.getuid?.() ?? 0, OTHER_UID);
    chmodSync(workdir, 0o770);
    await expect(backend.submit(request({ profile: profileIn }), context)).rejects.toMatchObject({
      code: 'E_UNTRUSTED_PATH',
      message: expect.stringContaining(`Fix: chmod go-w ${workdir}`),
    });
  });

  it('records pid, start time, boot id and host as the machine reports them', async () => {
    const backend = createLocalBackend();
    const result = await backend.submit(request({ argv: ['sleep', '30'] }), context);
    const pid = Number(result.externalId);
    groups.push(pid);
    expect(result.data).toMatchObject({
      pid,
      startTime: readProcessStat(pid)?.startTime,
      bootId: readBootId(),
    });
    expect(statSync(String(result.data.jobDir)).mode & 0o777).toBe(0o700);
  });
});

describe('poll and cancel: one script per target, identity checked on the target', () => {
  it('one script run polls every job; a live process with the recorded identity is running', async () => {
    const backend = createLocalBackend();
    const jobs = [];
    for (let index = 0; index < 3; index += 1) {
      const submitted = request({ argv: ['sleep', '30'] });
      const result = await backend.submit(submitted, context);
      groups.push(Number(result.externalId));
      jobs.push(asJob(submitted.id, result.data));
    }
    scripts = 0;
    const observed = await backend.poll(jobs, context);
    expect(scripts).toBe(1);
    expect([...observed.values()].map((one) => one.kind === 'found' && one.state)).toEqual([
      'running',
      'running',
      'running',
    ]);
    scripts = 0;
    const outcomes = await backend.cancel(jobs, context, { force: true });
    expect(scripts).toBe(1);
    expect([...outcomes.values()]).toEqual([{ kind: 'sent' }, { kind: 'sent' }, { kind: 'sent' }]);
    for (const job of jobs) await expect.poll(() => alive(Number(job.data.pid))).toBe(false);
  });

  it('another boot or another host is never the job: not running, not signalled', async () => {
    const backend = createLocalBackend();
    const other = bystander();
    const base = { ...other, jobDir: scratch, log: join(scratch, 'log') };
    const rebooted = asJob('aaaaaaaaaaa1', { ...base, bootId: `${readBootId().slice(0, -4)}0000` });
    const elsewhere = asJob('aaaaaaaaaaa2', { ...base, bootId: readBootId(), host: 'elsewhere' });
    const outcomes = await backend.cancel([rebooted, elsewhere], context, { force: true });
    expect([...outcomes.values()]).toEqual([{ kind: 'not-running' }, { kind: 'not-running' }]);
    const observed = await backend.poll([rebooted, elsewhere], context);
    expect(observed.get(rebooted.id)).toMatchObject({
      kind: 'absent',
      detail: 'the host has rebooted since the job started',
    });
    expect(observed.get(elsewhere.id)).toMatchObject({
      kind: 'query-failed',
      error: { code: 'E_TRANSPORT', message: expect.stringContaining('elsewhere') },
    });
    expect(alive(other.pid)).toBe(true);
  });

  it('a record without identity, or an exit-code file without a code, is a failed query', async () => {
    const backend = createLocalBackend();
    const dir = join(scratch, 'job');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, 'exit-code'), 'garbage\n');
    const corrupt = asJob('bbbbbbbbbbb1', { jobDir: dir });
    const garbled = asJob('bbbbbbbbbbb2', {
      jobDir: dir,
      pid: 999_999,
      startTime: '1',
      bootId: readBootId(),
    });
    const observed = await backend.poll([corrupt, garbled], context);
    expect(observed.get(corrupt.id)).toMatchObject({ error: { code: 'E_CORRUPT_RECORD' } });
    expect(observed.get(garbled.id)).toMatchObject({
      kind: 'query-failed',
      source: 'exit-code-file',
      error: { code: 'E_CORRUPT_RECORD' },
    });
    expect(await backend.cancel([corrupt], context, { force: true })).toEqual(
      new Map([[corrupt.id, { kind: 'not-running' }]]),
    );
  });
});

describe('recover', () => {
  const old = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString();

  it('gives a job directory without wrapper.pid the injected grace', async () => {
    const young = request({ createdAt: old(1) });
    const aged = request({ createdAt: old(10) });
    for (const one of [young, aged])
      mkdirSync(join(scratch, 'runs', one.id), { recursive: true, mode: 0o700 });
    const found = await createLocalBackend({ submitGraceSeconds: 5 }).recover?.(
      [young, aged],
      context,
    );
    expect(found?.has(young.id)).toBe(false);
    expect(found?.get(aged.id)).toBeNull();
    expect((await createLocalBackend().recover?.([aged], context))?.size).toBe(0);
  });

  it('a submit that never made its job directory never starts: recovery takes its place', async () => {
    const backend = createLocalBackend();
    const interrupted = request({ argv: ['sh', '-c', 'echo ran > "$0"', join(scratch, 'ran')] });
    const found = await backend.recover?.([interrupted], context);
    expect(found?.get(interrupted.id)).toBeNull();
    const jobDir = join(scratch, 'runs', interrupted.id);
    expect(readdirSync(jobDir)).toEqual(['.abandoned']);
    expect(statSync(jobDir).mode & 0o777).toBe(0o700);
    // The submit script, late: it finds the place taken and starts nothing.
    await expect(backend.submit(interrupted, context)).rejects.toMatchObject({
      code: 'E_SUBMIT_FAILED',
      message: expect.stringContaining('never reused'),
    });
    expect(existsSync(join(scratch, 'ran'))).toBe(false);
    expect((await backend.recover?.([interrupted], context))?.get(interrupted.id)).toBeNull();
  });

  it('adopts a started job, and never a wrapper pid recycled by another process', async () => {
    const backend = createLocalBackend();
    const submitted = request({ argv: ['sleep', '30'] });
    const result = await backend.submit(submitted, context);
    const pid = Number(result.externalId);
    groups.push(pid);
    const wrapperPid = join(String(result.data.jobDir), 'wrapper.pid');
    await expect.poll(() => existsSync(wrapperPid)).toBe(true);
    const found = await backend.recover?.([submitted], context);
    expect(found?.get(submitted.id)).toMatchObject({
      externalId: String(pid),
      data: { pid, startTime: result.data.startTime, bootId: readBootId() },
    });
    process.kill(-pid, 'SIGKILL');
    await expect.poll(() => alive(pid)).toBe(false);
    const other = bystander();
    writeFileSync(wrapperPid, `${other.pid} ${String(result.data.startTime)}\n`);
    expect((await backend.recover?.([submitted], context))?.get(submitted.id)).toBeNull();
    expect(alive(other.pid)).toBe(true);
  });
});
