/**
 * The listing index as the victim's `yonder list --all` meets it: an index another user planted
 * (while the state directory was open to them) is refused by name, never believed, and left
 * alone; moved aside as the message says, the listing is right and the index the victim's again.
 */
import { chownSync, lstatSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cleanupUsers,
  type InstalledCli,
  jsonOf,
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
  ({ victim, attacker, cli } = usersWithCli());
});
afterAll(() => cleanupUsers());

/** A ledger of the victim's with two finished jobs, settled (dated a minute back). */
async function ledger(prefix: string) {
  const state = join(ownedDir(victim, prefix), 'state');
  const env = { YONDER_STATE_DIR: state };
  const run = (args: string[]) => runAs(victim, cli.bin, args, { env });
  const ids: string[] = [];
  for (const word of ['one', 'two']) {
    const submit = await run(['submit', '--', 'echo', word]);
    expect(submit.code, submit.stderr).toBe(0);
    ids.push(submit.stdout.trim());
  }
  const wait = await run(['wait', ...ids]);
  expect(wait.code, wait.stderr).toBe(0);
  const past = new Date(Date.now() - 60_000);
  for (const id of ids) {
    const shard = join(state, 'jobs', id.slice(0, 2));
    utimesSync(join(shard, `${id}.json`), past, past);
    utimesSync(shard, past, past);
  }
  return { ids, run, index: join(state, 'listing.index') };
}

describe('the listing index in the victim’s state directory', () => {
  it('an index the attacker planted is refused, named, and never believed', async () => {
    const { ids, run, index } = await ledger('listing-planted');
    const first = await run(['list', '--all', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(
      jsonOf(first)
        .result.map((job: { id: string }) => job.id)
        .sort(),
    ).toEqual(ids.sort());
    expect(lstatSync(index).uid).toBe(victim.uid);
    // The attacker's copy of the victim's index, with a job of theirs added.
    const forged = Buffer.from(readFileSync(index));
    rmSync(index);
    writeFileSync(index, forged);
    chownSync(index, attacker.uid, attacker.gid);
    for (const args of [
      ['list', '--all', '--json'],
      ['list', '--all'],
    ]) {
      const result = await run(args);
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).toContain(index);
      expect(result.stdout + result.stderr).toMatch(/E_UNTRUSTED_PATH|not a file of yours/);
    }
    expect(readFileSync(index).equals(forged)).toBe(true);
    // The victim moves it aside as told: the listing is right again, and the index rebuilt.
    rmSync(index);
    const again = await run(['list', '--all', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(
      jsonOf(again)
        .result.map((job: { id: string }) => job.id)
        .sort(),
    ).toEqual(ids.sort());
    expect(lstatSync(index).uid).toBe(victim.uid);
  });
});
