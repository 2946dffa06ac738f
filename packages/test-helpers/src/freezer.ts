/**
 * Freezing a process with the cgroup v1 freezer (as root): a frozen process outlives SIGKILL
 * until it is thawed, the one way a test can make a process a cancel cannot stop.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from './until.js';

const ROOT = '/sys/fs/cgroup/freezer';
let groups = 0;

export interface Frozen {
  /** Let it run again (a SIGKILL it got meanwhile then ends it). */
  thaw(): void;
  /** Thaw, kill what is left in the group, wait for it to be empty, remove it. Safe to call twice. */
  remove(): Promise<void>;
}

/**
 * Put `pid` in a new freezer group and freeze it.
 * @throws Error when the freezer is not there (a cgroup v2-only host) or the test is not root.
 */
export function freezeProcess(pid: number): Frozen {
  if (!existsSync(join(ROOT, 'cgroup.procs')))
    throw new Error(
      `Freezing a process needs the cgroup v1 freezer at ${ROOT} (and root); it is not there.`,
    );
  groups += 1;
  const group = join(ROOT, `yonder-test-${process.pid}-${groups}`);
  mkdirSync(group);
  writeFileSync(join(group, 'cgroup.procs'), String(pid));
  writeFileSync(join(group, 'freezer.state'), 'FROZEN');
  const thaw = (): void => {
    if (existsSync(group)) writeFileSync(join(group, 'freezer.state'), 'THAWED');
  };
  const members = (): number[] =>
    readFileSync(join(group, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  return {
    thaw,
    async remove() {
      if (!existsSync(group)) return;
      thaw();
      for (const member of members()) {
        try {
          process.kill(member, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      await until(() => members().length === 0, 10_000, `the freezer group ${group} to empty`);
      rmdirSync(group);
    },
  };
}
