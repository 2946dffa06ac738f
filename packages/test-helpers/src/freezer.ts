/**
 * Freezing a process with the cgroup v1 freezer (as root): a frozen process outlives SIGKILL
 * until it is thawed, the one way a test can make a process a cancel cannot stop.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup/freezer';
let groups = 0;

export interface Frozen {
  /** Let it run again (a SIGKILL it got meanwhile then ends it). */
  thaw(): void;
  /** Thaw, kill what is left in the group, and remove the group. Safe to call twice. */
  remove(): void;
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
  return {
    thaw,
    remove() {
      if (!existsSync(group)) return;
      thaw();
      for (const member of readFileSync(join(group, 'cgroup.procs'), 'utf8').split('\n')) {
        try {
          if (member) process.kill(Number(member), 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      for (let attempt = 0; attempt < 100; attempt += 1) {
        try {
          rmdirSync(group);
          return;
        } catch {
          /* its last member is still on its way out */
        }
      }
    },
  };
}
