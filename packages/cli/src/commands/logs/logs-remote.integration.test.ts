import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOG_BYTES, LOG_LINES, printfFormat } from '@yonder/core/conformance';
import {
  type CliOptions,
  logWrites,
  referenceTail,
  requireCliBuild,
  requireSlurm,
  runCli,
  sshHostsEnv,
} from '@yonder/test-helpers';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBytes } from './test-support/run-bytes.js';

const TOYQ = new URL('../../../../backend-command/examples/toyq', import.meta.url).pathname;

let state: string;
let work: string;
let sshConfig: string;

const options = (env: Record<string, string> = {}): CliOptions => ({
  state,
  cwd: work,
  env: { TOYQ_DIR: join(work, 'queue'), ...env },
});

async function yonder(args: string[], env: Record<string, string> = {}) {
  const result = await runCli(args, options(env));
  return result;
}

async function finished(profile: string, ...argv: string[]): Promise<string> {
  const submit = await yonder(['submit', '--profile', profile, '--', ...argv]);
  expect(submit.code, submit.stderr).toBe(0);
  const id = submit.stdout.trim();
  expect((await yonder(['wait', id, '--timeout', '120'])).code).not.toBe(124);
  return id;
}

/** Every way of reading the log of a finished job gives back exactly `bytes`. */
async function readsBack(id: string, bytes: Buffer, chunk: number, count: number): Promise<void> {
  const env = { YONDER_LOG_CHUNK_BYTES: String(chunk) };
  const all = await runBytes(['logs', id, '--all'], options(env));
  expect(all.stdout.toString('hex'), all.stderr).toBe(bytes.toString('hex'));
  const follow = await runBytes(['logs', id, '-f', '--all'], options(env));
  expect(follow.stdout.equals(bytes)).toBe(true);
  expect(follow.stderr).toMatch(new RegExp(`^yonder: job ${id} succeeded \\(exit 0\\)\\n$`));
  const lines = await runBytes(['logs', id, '-n', String(count)], options(env));
  expect(lines.stdout.equals(referenceTail(bytes, count))).toBe(true);
  const tail = await runBytes(['logs', id, '--bytes', String(count)], options(env));
  expect(tail.stdout.equals(bytes.subarray(Math.max(0, bytes.length - count)))).toBe(true);
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 1;
}

beforeAll(() => {
  requireCliBuild();
  state = mkdtempSync(join(tmpdir(), 'yonder-logs-remote-'));
  work = mkdtempSync(join(tmpdir(), 'yonder logs remote '));
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('yonder logs over SSH', () => {
  let config: string;

  beforeAll(async () => {
    sshConfig = sshHostsEnv().YONDER_SSH_CONFIG as string;
    // A host of our own, `flaky`: the test host, until its port is changed to a closed one.
    const target = readFileSync(sshConfig, 'utf8')
      .split('\n\n')
      .find((block) => block.startsWith('Host target\n'));
    expect(target).toBeDefined();
    config = join(work, 'ssh_config');
    writeFileSync(config, `${target?.replace('Host target', 'Host flaky')}\n`);
    const add = await yonder([
      'profile',
      'add',
      'box',
      '--backend',
      'ssh',
      '--host',
      'flaky',
      '--ssh-config',
      config,
    ]);
    expect(add.code, add.stderr).toBe(0);
  });

  it('returns exactly what a job wrote, by every way of reading, in chunks of any size', async () => {
    await fc.assert(
      fc.asyncProperty(
        logWrites,
        fc.integer({ min: 3, max: 19 }),
        fc.integer({ min: 0, max: 12 }),
        async (writes, chunk, count) => {
          const bytes = Buffer.concat(writes);
          const id = await finished('box', 'printf', printfFormat(bytes));
          await readsBack(id, bytes, chunk, count);
        },
      ),
      { numRuns: 4 },
    );
  }, 600_000);

  it('shows the kept tail, saying from when, when the host cannot be reached', async () => {
    const id = await finished('box', 'printf', printfFormat(LOG_BYTES));
    const never = await finished('box', 'echo', 'never read');
    const first = await runBytes(['logs', id, '-n', '2'], options());
    expect(first.stdout.equals(referenceTail(LOG_BYTES, 2))).toBe(true);
    const before = readFileSync(config, 'utf8');
    writeFileSync(config, before.replace(/Port \d+/, `Port ${await closedPort()}`));
    try {
      // The whole log was kept (it is under 64 KiB), whatever part of it was read.
      const kept = await runBytes(['logs', id, '--all'], options());
      expect(kept.code).toBe(0);
      expect(kept.stdout.equals(LOG_BYTES)).toBe(true);
      expect(kept.stderr).toMatch(
        new RegExp(
          `^yonder: cannot reach the target of job ${id} \\((Cannot connect to .*ECONNREFUSED|ssh could not reach .*Connection refused).*\\); this is the end of its log as read at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z \\(bytes 0-${LOG_BYTES.length} of ${LOG_BYTES.length}\\)\\.\\n$`,
        ),
      );
      const lines = await runBytes(['logs', id, '-n', '3'], options());
      expect(lines.stdout.equals(referenceTail(LOG_BYTES, 3))).toBe(true);
      const json = JSON.parse(
        (await yonder(['logs', id, '--json', '-n', String(LOG_LINES.length)])).stdout,
      );
      expect(Buffer.from(json.result.data, 'base64').equals(LOG_BYTES)).toBe(true);
      expect(json.result.kept).toMatchObject({
        complete: true,
        reason: expect.stringMatching(/ECONNREFUSED|Connection refused/),
      });
      const follow = await runBytes(['logs', id, '-f', '-n', '1'], options());
      expect(follow.code).toBe(0);
      expect(follow.stdout.equals(referenceTail(LOG_BYTES, 1))).toBe(true);
      expect(follow.stderr).toContain('after it ended');
      const none = await yonder(['logs', never]);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain(
        `Cannot reach the target of job ${never} to read its log, and no copy of its end is kept yet`,
      );
    } finally {
      writeFileSync(config, before);
    }
    expect((await runBytes(['logs', never], options())).stdout.toString()).toBe('never read\n');
  }, 240_000);
});

describe('yonder logs on Slurm', () => {
  beforeAll(async () => {
    requireSlurm();
    const add = await yonder([
      'profile',
      'add',
      'hpc',
      '--backend',
      'slurm',
      '--workdir',
      join(work, 'slurm-jobs'),
    ]);
    expect(add.code, add.stderr).toBe(0);
  });

  it('returns the bytes exactly; a held job has not started yet', async () => {
    const id = await finished('hpc', 'printf', printfFormat(LOG_BYTES));
    await readsBack(id, LOG_BYTES, 3, 4);
    const held = await yonder([
      'submit',
      '--profile',
      'hpc',
      '--scheduler-option=--hold',
      '--',
      'true',
    ]);
    const heldId = held.stdout.trim();
    const logs = await yonder(['logs', heldId]);
    expect(logs.code).toBe(0);
    expect(logs.stderr).toBe(
      `yonder: job ${heldId} has not started yet (pending): its log appears when it starts.\n`,
    );
    await yonder(['cancel', heldId]);
  }, 300_000);
});

describe('yonder logs on the command backend (toyq)', () => {
  const add = (name: string, ...extra: string[]) =>
    yonder([
      'profile',
      'add',
      name,
      '--backend',
      'command',
      '--workdir',
      join(work, 'toyq-jobs'),
      '--set',
      `submit=${TOYQ}/toyq-submit {script}`,
      '--set',
      'idPattern=Job (?<id>\\d+) queued',
      '--set',
      `status=${TOYQ}/toyq-status {external_ids}`,
      '--set',
      `cancel=${TOYQ}/toyq-cancel {external_ids}`,
      ...extra,
    ]);

  it('returns the bytes exactly, from its log file and from a logs command', async () => {
    expect((await add('toyq')).code).toBe(0);
    expect((await add('toyq-cat', '--set', 'logs=cat {log}')).code).toBe(0);
    for (const profile of ['toyq', 'toyq-cat']) {
      const id = await finished(profile, 'printf', printfFormat(LOG_BYTES));
      await readsBack(id, LOG_BYTES, 4, 3);
    }
  }, 300_000);
});
