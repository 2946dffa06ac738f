import type { JobRecord } from '@yonder/core';
import { describe, expect, it } from 'vitest';
import { endingLine } from './log-output.js';

/** Only the fields `endingLine` reads. */
function ended(fields: Partial<JobRecord>): JobRecord {
  return {
    id: 'abc123',
    state: 'failed',
    exitCode: null,
    signal: null,
    reason: null,
    ...fields,
  } as JobRecord;
}

describe('the line that says how a followed job ended', () => {
  it('gives the exit code once, and a reason only when it says more', () => {
    expect(endingLine(ended({ exitCode: 3, reason: 'exit code 3' }))).toBe(
      'yonder: job abc123 failed (exit 3)\n',
    );
    expect(
      endingLine(ended({ exitCode: 137, reason: 'exit code 137 (or killed by SIGKILL)' })),
    ).toBe('yonder: job abc123 failed (exit 137)\n');
    // No exit code is known (sacct's reduced status): the reason is all there is.
    const reason =
      "exit code 9 or 137 (Slurm's accounting shows exit codes of 128 and more reduced by 128)";
    expect(endingLine(ended({ reason }))).toBe(`yonder: job abc123 failed (${reason})\n`);
    expect(endingLine(ended({ signal: 'SIGKILL', reason: 'killed by SIGKILL' }))).toBe(
      'yonder: job abc123 failed (signal SIGKILL)\n',
    );
    expect(endingLine(ended({ reason: 'timeout' }))).toBe('yonder: job abc123 failed (timeout)\n');
  });
});
