/** Job dependencies through the built CLI, on every kind of backend: this machine, an ssh host, the Slurm test cluster and the command backend's toy queue. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  collectProcess,
  requireCliBuild,
  requireSlurm,
  runCli,
  spawnCli,
  sshHostsEnv,
  toyqProfileFlags,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let state: string;
let work: string;

function yonder(args: string[], input?: string) {
  return runCli(args, {
    state,
    cwd: work,
    timeoutMs: 400_000,
    ...(input === undefined ? {} : { input }),
  });
}

async function records(ids: readonly string[]): Promise<Array<Record<string, any>>> {
  const status = await yonder(['status', '--no-refresh', '--json', ...ids]);
  expect(status.code, status.stderr).toBe(0);
  return JSON.parse(status.stdout).result;
}

/** How each backend's profile is made (`local` is built in). */
const PROFILES: Record<string, () => string[] | null> = {
  local: () => null,
  ssh: () => ['--backend', 'ssh', '--host', 'target', '--ssh-config', sshConfig],
  slurm: () => [
    '--backend',
    'slurm',
    '--workdir',
    join(work, 'slurm jobs'),
    '--set',
    'requeue=false',
  ],
  command: () => toyqProfileFlags(join(work, 'queue jobs')),
};
let sshConfig: string;

beforeAll(async () => {
  requireCliBuild();
  requireSlurm();
  sshConfig = sshHostsEnv().YONDER_SSH_CONFIG as string;
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-pipelines-'));
  work = mkdtempSync(join(tmpdir(), "yonder pipelines 'work' "));
  for (const [name, make] of Object.entries(PROFILES)) {
    const flags = make();
    if (flags === null) continue;
    const add = await yonder(['profile', 'add', name, ...flags]);
    expect(add.code, add.stderr).toBe(0);
  }
});

afterAll(() => {
  rmSync(state, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

/** What the pipeline's first job prints: quotes, $(), ;, a newline, unicode, a leading dash. */
const HOSTILE = `-n $(id); "q" 'x' \`uname\` ünï\nline2`;

/** How long after its parent ended (by the target's own times) each dependent started. */
const delays: Record<string, number[]> = {};

describe.each(Object.keys(PROFILES))('a pipeline on the %s backend', (profile) => {
  it('runs each job after its parents, settles the ones that can never run, never hangs', async () => {
    const lines = [
      { argv: ['sh', '-c', 'printf "%s\\n" "$1"; sleep 1', 'sh', HOSTILE], name: 'split' },
      { argv: ['sh', '-c', 'echo work; exit 3'], name: 'work', after: ['#1'] },
      { argv: ['echo', 'join'], name: 'join', after: ['#2'] },
      { argv: ['echo', 'cleanup'], name: 'cleanup', after: ['#2:notok', '#1:any'] },
      { argv: ['echo', 'never'], name: 'never', after: ['#1:notok'] },
      { argv: ['echo', 'alongside'], name: 'alongside', after: ['#2:started'] },
    ];
    // A blank line in the middle: "#N" is the job of line N of the file, not its position.
    const batch = `${JSON.stringify(lines[0])}\n\n${lines
      .slice(1)
      .map((line) =>
        JSON.stringify(line).replace(
          /"#(\d)/g,
          (_m, n) => `"#${Number(n) === 1 ? 1 : Number(n) + 1}`,
        ),
      )
      .join('\n')}\n`;
    const submit = await yonder(['submit', '--batch', '-', '--profile', profile], batch);
    expect(submit.code, submit.stderr).toBe(0);
    const ids = submit.stdout.trim().split('\n');
    expect(ids).toHaveLength(6);
    const [split, work, join_, cleanup, never, alongside] = ids as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    // Written whole before anything was submitted: every dependent is in the ledger, waiting.
    const first = await records(ids);
    for (const job of first.slice(1)) expect(job.after.length).toBeGreaterThan(0);
    expect(first[1]?.after).toEqual([{ job: split, when: 'ok' }]);
    expect(first[3]?.after).toEqual([
      { job: work, when: 'notok' },
      { job: split, when: 'any' },
    ]);

    const wait = await yonder(['wait', ...ids, '--timeout', '300']);
    expect(wait.code, wait.stdout + wait.stderr).not.toBe(0);
    expect(wait.code).not.toBe(124);
    const done = Object.fromEntries((await records(ids)).map((job) => [job.id, job]));
    expect(done[split]).toMatchObject({ state: 'succeeded' });
    expect(done[work]).toMatchObject({ state: 'failed', exitCode: 3 });
    expect(done[cleanup]).toMatchObject({ state: 'succeeded' });
    expect(done[alongside]).toMatchObject({ state: 'succeeded' });
    for (const [id, parent] of [
      [join_, work],
      [never, split],
    ] as const) {
      expect(done[id]).toMatchObject({
        state: 'failed',
        reason: 'dependency-never-satisfied',
        externalId: null,
        error: { code: 'E_DEPENDENCY_NEVER_SATISFIED' },
      });
      expect(done[id].error.message).toContain(parent);
    }
    expect((await yonder(['logs', split])).stdout).toBe(`${HOSTILE}\n`);
    expect((await yonder(['logs', cleanup])).stdout).toBe('cleanup\n');
    // Each dependent was submitted only after its parent ended (by the target's clock, here this
    // machine's), never before. How soon it started is reported (the toy queue records no start:
    // its submit time stands in).
    for (const [child, parent] of [
      [work, split],
      [cleanup, work],
    ] as const) {
      const ended = Date.parse(done[parent].finishedAt);
      expect(
        Date.parse(done[child].submittedAt),
        `${done[child].name} was submitted before ${done[parent].name} ended`,
      ).toBeGreaterThan(ended - 1000);
      const measured = delays[profile] ?? [];
      measured.push(Date.parse(done[child].startedAt ?? done[child].submittedAt) - ended);
      delays[profile] = measured;
    }
    const status = await yonder(['status', join_]);
    expect(status.stdout).toContain(`After:        ${work}:ok (failed)`);
    expect(status.stdout).toMatch(/Reason: +dependency-never-satisfied/);
  }, 420_000);

  it('cancelling a parent settles its ok dependents at once; a waiting job is cancelled at once', async () => {
    const parent = (
      await yonder(['submit', '--profile', profile, '--name', 'long', '--', 'sleep', '300'])
    ).stdout.trim();
    // Of another profile: the local backend's job waits for this backend's.
    const ok = (
      await yonder(['submit', '--after', parent.slice(0, 7), '--', 'echo', 'never runs'])
    ).stdout.trim();
    const any = (
      await yonder([
        'submit',
        '--profile',
        profile,
        '--after',
        `${parent}:any`,
        '--',
        'echo',
        'after',
      ])
    ).stdout.trim();
    const held = (
      await yonder([
        'submit',
        '--profile',
        profile,
        '--after',
        `${parent}:started`,
        '--after',
        `${any}:ok`,
        '--',
        'true',
      ])
    ).stdout.trim();
    const list = await yonder(['list', '--no-refresh']);
    expect(list.stdout).toMatch(new RegExp(`${ok} .* waiting`));
    const all = await yonder(['list', '--all', '--no-refresh']);
    expect(all.stdout).toMatch(new RegExp(`${ok} .* waiting`));
    expect((await yonder(['status', '--no-refresh', ok])).stdout).toMatch(
      /State: +pending \(waiting\)/,
    );
    const cancelHeld = await yonder(['cancel', held]);
    expect(cancelHeld.code, cancelHeld.stderr).toBe(0);
    expect((await records([held]))[0]).toMatchObject({
      state: 'cancelled',
      reason: 'cancelled-while-waiting',
      externalId: null,
    });
    const cancel = await yonder(['cancel', parent, '--no-wait']);
    expect(cancel.code, cancel.stderr).toBe(0);
    // Settled by the cancel itself, before any refresh saw the parent end.
    const settled = (await records([ok]))[0] as Record<string, any>;
    expect(settled).toMatchObject({ state: 'failed', reason: 'dependency-never-satisfied' });
    expect(settled.error.message).toContain(`${parent} was cancelled`);
    const wait = await yonder(['wait', any, '--timeout', '300']);
    expect(wait.code, wait.stdout + wait.stderr).toBe(0);
    expect((await records([parent]))[0]?.state).toBe('cancelled');
  }, 420_000);
});

describe('several yonder processes refreshing at once', () => {
  it('submit each dependent once: one claims it, the others leave it', async () => {
    const lines = [
      { argv: ['sh', '-c', 'sleep 2'], name: 'parent' },
      ...Array.from({ length: 6 }, (_, n) => ({ argv: ['echo', `child ${n}`], after: ['#1'] })),
    ];
    const submit = await yonder(
      ['submit', '--batch', '-'],
      `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`,
    );
    expect(submit.code, submit.stderr).toBe(0);
    const ids = submit.stdout.trim().split('\n');
    const waits = await Promise.all(
      Array.from({ length: 4 }, () => yonder(['wait', ...ids, '--timeout', '300'])),
    );
    for (const wait of waits) expect(wait.code, wait.stdout + wait.stderr).toBe(0);
    for (const job of (await records(ids)).slice(1)) {
      expect(job.state).toBe('succeeded');
      const claims = job.history.filter(
        (step: { to: string; source: string }) =>
          step.to === 'submitting' && step.source === 'dependencies',
      );
      expect(claims).toHaveLength(1);
    }
  }, 420_000);
});

describe('a batch cut short', () => {
  it('is whole in the ledger before anything is submitted, and leaves nothing half-linked', async () => {
    // A queue whose submit hangs: the batch is killed while it is asked for the first job.
    // (Outside the work directory, whose name has spaces and quotes a template would split.)
    const hang = join(state, 'hanging-submit');
    writeFileSync(hang, '#!/bin/sh\nsleep 30\n');
    chmodSync(hang, 0o755);
    const flags = toyqProfileFlags(join(work, 'hang jobs')).map((flag) =>
      flag.startsWith('submit=') ? `submit=${hang} {script}` : flag,
    );
    expect((await yonder(['profile', 'add', 'hang', ...flags])).code).toBe(0);
    const lines = [
      { argv: ['echo', 'first'], name: 'first' },
      { argv: ['echo', 'second'], name: 'second', after: ['#1'] },
      { argv: ['echo', 'third'], name: 'third', after: ['#2'] },
    ];
    const child = spawnCli(['submit', '--batch', '-', '--profile', 'hang'], {
      state,
      cwd: work,
      input: `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`,
    });
    child.stdin?.end(`${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const ended = collectProcess(child);
    const ours = async () => {
      const list = await yonder(['list', '--all', '--no-refresh', '--profile', 'hang', '--json']);
      return JSON.parse(list.stdout).result as Array<Record<string, any>>;
    };
    let exited: string | null = null;
    void ended.then((result) => {
      exited = `the batch ended first (${result.code}): ${result.stderr}`;
    });
    await until(
      async () => {
        if (exited) throw new Error(exited);
        return (await ours()).some((job) => job.name === 'first' && job.state === 'submitting');
      },
      120_000,
      'the batch to ask the queue for its first job',
    );
    const cut = await ours();
    expect(cut.map((job) => job.name).sort()).toEqual(['first', 'second', 'third']);
    for (const job of cut.filter((found) => found.name !== 'first'))
      expect(job).toMatchObject({ state: 'pending', nativeState: 'waiting' });
    child.kill('SIGKILL');
    await ended;
    // The next refresh finds the first job's submit interrupted, and settles what waited for it.
    const list = await yonder(['list']);
    expect(list.code, list.stderr).toBe(0);
    const after = Object.fromEntries((await ours()).map((job) => [job.name, job]));
    expect(after.first).toMatchObject({ state: 'failed' });
    expect(after.second).toMatchObject({ state: 'failed', reason: 'dependency-never-satisfied' });
    expect(after.third).toMatchObject({ state: 'failed', reason: 'dependency-never-satisfied' });
  }, 300_000);
});

describe('bad input, refused before anything is written', () => {
  it('names the field and the fix, and leaves the ledger as it was', async () => {
    const failed = (await yonder(['submit', '--', 'false'])).stdout.trim();
    await yonder(['wait', failed]);
    const before = (await yonder(['list', '--all', '-q'])).stdout;
    const cases: Array<[string[], string | undefined, RegExp]> = [
      [
        ['--after', `${failed}`],
        undefined,
        new RegExp(`after\\.0: ${failed} failed \\(exit 1\\), so "${failed}:ok" .*can never hold`),
      ],
      [
        ['--after', `${failed.slice(0, 6)}:okay`],
        undefined,
        /"okay" is not a condition; WHEN is ok \(the default\), notok, any or started/,
      ],
      [['--after', '$(id);x'], undefined, /after\.0: "\$\(id\);x": "\$\(id\);x" names no job/],
      [['--after', 'ab\ncd'], undefined, /after\.0: "ab\\ncd"/],
      [['--after=-1'], undefined, /after\.0: "-1"/],
      [['--after', '#1'], undefined, /only a batch line may use #N/],
      [['--after', 'fffffffffff0'], undefined, /No job matches "fffffffffff0"/],
      [
        ['--batch', '-'],
        '{"argv":["true"],"after":["#3"]}\n\n{"argv":["true"],"after":["#1:any"]}\n',
        /line 1: after: #1 → #3 → #1 is a cycle/,
      ],
      [
        ['--batch', '-'],
        '{"argv":["true"],"after":["#1"]}\n',
        /line 1: after\.0: "#1" is this job itself/,
      ],
      [
        ['--batch', '-'],
        '{"argv":["true"],"after":"#2"}\n{"argv":["true"]}\n',
        /line 1: after: must be a list/,
      ],
    ];
    for (const [args, input, message] of cases) {
      const result = await yonder(
        ['submit', ...args, ...(input === undefined ? ['--', 'true'] : [])],
        input,
      );
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(1);
      expect(result.stderr).toMatch(message);
    }
    expect((await yonder(['list', '--all', '-q'])).stdout).toBe(before);
    const refused = await yonder(['resubmit', failed, '--after', failed]);
    expect(refused.stderr).toMatch(/can never hold/);
  }, 120_000);
});

afterAll(() => {
  // Reported, not asserted: how soon after a parent ended its dependent started under `yonder wait`.
  for (const [profile, list] of Object.entries(delays))
    console.log(
      `pipeline delay on ${profile}: ${list.map((ms) => `${ms} ms`).join(', ')} (parent end → dependent start, target's clock)`,
    );
});
