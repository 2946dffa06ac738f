import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  alive,
  jobProcessesGone,
  processGroup,
  readProcessState,
  unsignalled,
} from './process-state.js';
import { until } from './until.js';

/** A detached sh (its own process group) running a `sleep` child; resolves with both pids. */
async function group(): Promise<{ leader: number; child: number }> {
  const sh = spawn('sh', ['-c', 'sleep 60 & echo $!; wait'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const child = await new Promise<number>((resolve) =>
    sh.stdout.once('data', (chunk) => resolve(Number(String(chunk).trim()))),
  );
  return { leader: sh.pid as number, child };
}

describe('process state from /proc', () => {
  it('reads this process', () => {
    const state = readProcessState(process.pid);
    expect(state).toMatchObject({ pid: process.pid, ppid: process.ppid, exiting: false });
    expect(alive(process.pid)).toBe(true);
    expect(unsignalled(process.pid)).toBe(true);
  });

  it('a finished process is not alive', () => {
    const done = spawnSync('true');
    expect(done.pid).toBeGreaterThan(0);
    expect(alive(done.pid as number)).toBe(false);
    expect(readProcessState(2 ** 22 + 1)).toBeNull();
  });

  it('finds every process of a group, and sees it gone once the group is killed', async () => {
    const { leader, child } = await group();
    expect(readProcessState(child)?.pgrp).toBe(leader);
    expect(processGroup(leader).sort()).toEqual([leader, child].sort());
    expect(jobProcessesGone(leader)).toBe(false);
    process.kill(-leader, 'SIGKILL');
    await until(() => jobProcessesGone(leader), 5_000, 'the group to die');
    expect(alive(child)).toBe(false);
  });

  it('sees a signal that is pending but not yet acted on', async () => {
    const { leader, child } = await group();
    try {
      expect(unsignalled(child)).toBe(true);
      process.kill(child, 'SIGSTOP');
      await until(() => readProcessState(child)?.state === 'T', 5_000, 'the child to stop');
      // A stopped process keeps a TERM pending until it is continued.
      process.kill(child, 'SIGTERM');
      expect(alive(child)).toBe(true);
      expect(unsignalled(child)).toBe(false);
    } finally {
      process.kill(-leader, 'SIGKILL');
    }
  });
});
