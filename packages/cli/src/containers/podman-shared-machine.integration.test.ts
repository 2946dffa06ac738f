/**
 * Issue 25, attacks 5 and 8, through the built CLI as the victim (rootless podman) with the
 * attacker as a second user on the same machine: a container bind source in a team directory
 * swapped for a link to the victim's `~/.ssh`, and a container job's variables read from
 * podman's command line in /proc.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  asUser,
  cleanupUsers,
  labGroup,
  onCleanup,
  requireUsers,
  type TestUser,
  until,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ContainerUser,
  processesHolding,
  requirePodman,
  TEST_IMAGE,
  victimUser,
} from './container-test-kit.js';

const IN_CONTAINER = ['--container-runtime', 'podman', '--container-image', TEST_IMAGE];

let user: ContainerUser;
let victim: TestUser;
let attacker: TestUser;

beforeAll(() => {
  requirePodman();
  ({ victim, attacker } = requireUsers());
  user = victimUser();
});
afterAll(cleanupUsers);

/** A directory of root's below /tmp with `group` and `mode`, as an admin makes a team's space. */
function teamSpace(group: number, mode: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'yonder-team-space-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  chownSync(dir, 0, group);
  chmodSync(dir, mode);
  return dir;
}

describe('a bind source in a team directory (attack 5)', () => {
  it.each([
    {
      how: 'the victim’s results directory in a team directory both may write, swapped for the link',
      mode: 0o2775,
      refused: (team: string) =>
        `${team} (owner root (uid 0), mode 02775) is writable by its group`,
    },
    {
      how: 'the link planted at the name in a shared sticky directory (as /tmp)',
      mode: 0o1777,
      refused: (_team: string, results: string) =>
        `${results} (owner ${attacker.name} (uid ${attacker.uid}), mode 0777) is a symbolic link made by another user`,
    },
  ])(
    '$how: refused naming container.binds.0, nothing written to ~/.ssh',
    async ({ mode, refused }) => {
      const team = teamSpace(labGroup(), mode);
      const results = join(team, 'results $(id)');
      if (mode === 0o2775) {
        mkdirSync(results, { mode: 0o755 });
        chownSync(results, victim.uid, victim.gid);
        asUser(attacker, ['rmdir', results]);
      }
      // A stand-in for the victim's ~/.ssh.
      const keys = user.dir(`dot-ssh-${mode.toString(8)}`);
      const authorized = join(keys, 'authorized_keys');
      asUser(victim, ['sh', '-c', 'echo victim-key > "$1"', 'sh', authorized]);
      asUser(attacker, ['ln', '-s', keys, results]);

      const submitted = await user.yonder([
        'submit',
        ...IN_CONTAINER,
        '--bind',
        `${results}:/out:rw`,
        '--',
        'sh',
        '-c',
        'echo attacker-key >> /out/authorized_keys',
      ]);
      expect(submitted.code).not.toBe(0);
      expect(submitted.stderr).toContain(
        `Refusing the source of container.binds.0 ${results}: ${refused(team, results)}`,
      );
      expect(readFileSync(authorized, 'utf8')).toBe('victim-key\n');
    },
  );
});

describe('a container job’s variables (attack 8)', () => {
  it('--env and --container-env values are on no command line while the job runs, and reach the job', async () => {
    const out = user.dir('out-env');
    const mark = Math.random().toString(36).slice(2);
    const plain = `env-value-${mark} $(id) "q"`;
    const inside = `container-env-value-${mark}`;
    const submitted = await user.yonder([
      'submit',
      ...IN_CONTAINER,
      '--bind',
      `${out}:/out:rw`,
      '--env',
      `PLAIN=${plain}`,
      '--container-env',
      `INSIDE=${inside}`,
      '--',
      'sh',
      '-c',
      'echo ready > /out/ready; while [ ! -e /out/go ]; do sleep 0.1; done; printf "%s|%s\\n" "$PLAIN" "$INSIDE"',
    ]);
    expect(submitted.stderr).toBe('');
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    let holding: ReturnType<typeof processesHolding>[];
    try {
      await until(
        () => existsSync(join(out, 'ready')),
        120_000,
        'the job to start in its container',
      );
      holding = [processesHolding(plain), processesHolding(inside)];
    } finally {
      writeFileSync(join(out, 'go'), '');
    }
    expect(holding.map((found) => found.cmdline)).toEqual([[], []]);
    expect((await user.yonder(['wait', id])).code).toBe(0);
    expect((await user.yonder(['logs', id])).stdout).toBe(`${plain}|${inside}\n`);
  });

  it('refuses, naming the field, a value podman’s --env-file cannot carry', async () => {
    const submitted = await user.yonder([
      'submit',
      ...IN_CONTAINER,
      '--env',
      'MULTI=one\ntwo',
      '--container-env',
      `BIG=${'x'.repeat(65_536 - 'BIG='.length)}`,
      '--',
      'true',
    ]);
    expect(submitted.code).not.toBe(0);
    expect(submitted.stderr).toContain('env.MULTI');
    expect(submitted.stderr).toContain('container.env.BIG');
  });
});
