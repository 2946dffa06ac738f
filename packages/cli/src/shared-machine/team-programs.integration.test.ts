/**
 * Issue 25, attacks 2 and 3: programs a profile names in a team directory another user can
 * write — a Slurm `binDir`, the absolute programs of a command profile's templates. The
 * attacker replaces one; the victim's next `profile check`, submit or status must refuse it,
 * naming the field and the fix, and run nothing of theirs.
 */
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  asUser,
  cleanupUsers,
  type InstalledCli,
  jsonOf,
  labGroup,
  onCleanup,
  ownedDir,
  runAs,
  type TestUser,
  usersWithCli,
} from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let victim: TestUser;
let attacker: TestUser;
let cli: InstalledCli;

beforeAll(() => {
  ({ victim, attacker, cli } = usersWithCli(['@yonder/backend-command', '@yonder/backend-slurm']));
});
afterAll(() => cleanupUsers());

/** A directory of root's with `mode`, below /tmp; removed at the end. */
function rootOwned(prefix: string, mode: number): string {
  const dir = mkdtempSync(join(tmpdir(), `yonder-${prefix}-`));
  chmodSync(dir, mode);
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A team's bin directory as an admin set it up: root's, its programs root's (each `name` a
 * script with `body`), the directory group-writable by the team (both users) when `open`.
 */
function teamBin(programs: Record<string, string>): { bin: string; open: () => void } {
  const bin = join(rootOwned('team', 0o755), 'bin $(id) ;x');
  mkdirSync(bin, { mode: 0o755 });
  for (const [name, body] of Object.entries(programs))
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  const open = () => {
    chownSync(bin, 0, labGroup());
    chmodSync(bin, 0o2775);
  };
  return { bin, open };
}

/** The attacker replaces `name` in `bin` by a program leaving a mark naming who ran it. */
function replace(bin: string, name: string, marks: string, then: string): void {
  asUser(attacker, ['rm', '-f', join(bin, name)]);
  asUser(attacker, [
    'sh',
    '-c',
    'printf "%s\\n" "#!/bin/sh" ": > \\"$1/$2-\\$(id -un)\\"" "$3" > "$4" && chmod 755 "$4"',
    'sh',
    marks,
    name,
    then,
    join(bin, name),
  ]);
}

function victimMarks(marks: string): string[] {
  return readdirSync(marks).filter((name) => name.endsWith(`-${victim.name}`));
}

/** `yonder ARGS` as the victim, on a ledger and config of their own. */
function victimYonder(): (args: readonly string[]) => ReturnType<typeof runAs> {
  const state = ownedDir(victim, 'team-programs');
  const env = { YONDER_STATE_DIR: join(state, 'state'), XDG_CONFIG_HOME: join(state, 'config') };
  return (args) => runAs(victim, cli.bin, args, { env });
}

describe('a Slurm binDir the team can write (attack 2)', () => {
  it('submit and profile check refuse it, naming options.binDir and the fix; the replaced sbatch never runs as the victim', async () => {
    const commands = ['sbatch', 'squeue', 'sacct', 'scancel', 'scontrol'];
    const { bin, open } = teamBin(
      Object.fromEntries(commands.map((name) => [name, `exec /usr/bin/${name} "$@"`])),
    );
    const marks = rootOwned('marks', 0o1777);
    const yonder = victimYonder();
    const added = await yonder([
      'profile',
      'add',
      'hpc',
      '--backend',
      'slurm',
      '--set',
      `binDir=${bin}`,
    ]);
    expect(added.code, added.stderr).toBe(0);
    // While only root can write the directory, profile check finds the profile usable.
    const fine = await yonder(['profile', 'check', 'hpc', '--json']);
    expect(fine.code, fine.stdout).toBe(0);

    // The team's directory is opened to the group; the attacker replaces sbatch.
    open();
    replace(bin, 'sbatch', marks, 'exec /usr/bin/sbatch "$@"');
    const submitted = await yonder(['submit', '--profile', 'hpc', '--', 'true']);
    expect(submitted.code).not.toBe(0);
    expect(submitted.stderr).toContain(
      `Refusing the Slurm command of options.binDir ${bin}/sbatch: ${bin} (owner root (uid 0), mode 02775) is writable by its group`,
    );
    expect(submitted.stderr).toContain(`Fix: chmod go-w ${bin}`);

    const check = await yonder(['profile', 'check', 'hpc', '--json']);
    expect(check.code).not.toBe(0);
    const problems = (jsonOf(check) as { result: { problems: string[] } }).result.problems;
    expect(problems.join('\n')).toContain(
      `options.binDir: Refusing the Slurm bin directory ${bin}: ${bin} (owner root (uid 0), mode 02775) is writable by its group`,
    );
    expect(problems.join('\n')).toContain(`Fix: chmod go-w ${bin}`);
    expect(victimMarks(marks)).toEqual([]);
  });
});

describe('a command profile whose programs are in a directory the team can write (attack 3)', () => {
  it('the replaced qstat never runs as the victim: list, status, submit and profile check refuse it, naming the field', async () => {
    const { bin, open } = teamBin({
      qsub: 'echo 4242',
      qstat: 'for i; do echo "$i RUNNING"; done',
      qdel: 'exit 0',
    });
    const marks = rootOwned('marks', 0o1777);
    const yonder = victimYonder();
    const added = await yonder([
      'profile',
      'add',
      'queue',
      '--backend',
      'command',
      '--set',
      `submit='${bin}/qsub' {script}`,
      '--set',
      `status='${bin}/qstat' {external_ids}`,
      '--set',
      `cancel='${bin}/qdel' {external_ids}`,
    ]);
    expect(added.code, added.stderr).toBe(0);
    // While only root can write the directory, the queue works.
    const submitted = await yonder(['submit', '--json', '--profile', 'queue', '--', 'true']);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = String((jsonOf(submitted) as { result: { id: string } }).result.id);
    const first = await yonder(['status', id, '--json']);
    expect(first.code, first.stderr).toBe(0);

    // The team's directory is opened to the group; the attacker replaces qstat and qsub.
    open();
    replace(bin, 'qstat', marks, 'for i; do echo "$i RUNNING"; done');
    replace(bin, 'qsub', marks, 'echo 4243');

    for (const args of [
      ['list', '--json'],
      ['status', id, '--json'],
    ]) {
      const result = await yonder(args);
      expect(`${result.stdout}${result.stderr}`).toContain(
        `Refusing the program of options.status ${bin}/qstat: ${bin} (owner root (uid 0), mode 02775) is writable by its group`,
      );
    }
    const again = await yonder(['submit', '--profile', 'queue', '--', 'true']);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`Refusing the program of options.submit ${bin}/qsub`);

    const check = await yonder(['profile', 'check', 'queue', '--json']);
    expect(check.code).not.toBe(0);
    const problems = (jsonOf(check) as { result: { problems: string[] } }).result.problems.join(
      '\n',
    );
    for (const field of ['submit', 'status'])
      expect(problems).toContain(
        `options.${field}: Refusing the program of options.${field} ${bin}/q`,
      );
    expect(problems).toContain(`Fix: chmod go-w ${bin}`);
    expect(victimMarks(marks)).toEqual([]);
  });
});

describe('an editor in a directory the team can write', () => {
  it('profile edit refuses it, naming the fix; the replaced editor never runs as the victim', async () => {
    const { bin, open } = teamBin({ ed: 'exit 0' });
    const marks = rootOwned('marks', 0o1777);
    const state = ownedDir(victim, 'team-editor');
    const yonder = (args: readonly string[], editor: string) =>
      runAs(victim, cli.bin, args, {
        env: {
          YONDER_STATE_DIR: join(state, 'state'),
          XDG_CONFIG_HOME: join(state, 'config'),
          EDITOR: editor,
        },
      });
    const editor = join(bin, 'ed');
    expect((await yonder(['profile', 'add', 'mine', '--backend', 'local'], editor)).code).toBe(0);
    expect((await yonder(['profile', 'edit', 'mine'], editor)).code).toBe(0);

    open();
    replace(bin, 'ed', marks, 'exit 0');
    const edited = await yonder(['profile', 'edit', 'mine'], editor);
    expect(edited.code).not.toBe(0);
    expect(edited.stderr).toContain(
      `Refusing the editor ${editor}: ${bin} (owner root (uid 0), mode 02775) is writable by its group`,
    );
    expect(edited.stderr).toContain(`Fix: chmod go-w ${bin}`);
    expect(victimMarks(marks)).toEqual([]);
  });
});
