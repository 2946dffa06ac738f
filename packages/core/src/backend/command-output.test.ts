import { describe, expect, it } from 'vitest';
import { chunks, commandFailure } from './command-output.js';

describe('commandFailure', () => {
  it('says stderr, else stdout, else the exit status or signal', () => {
    const result = { stdout: ' out \n', stderr: '', exitCode: 3, signal: null } as never;
    expect(commandFailure(result)).toBe('out');
    expect(commandFailure({ ...(result as object), stderr: 'err\n' } as never)).toBe('err');
    expect(
      commandFailure({ stdout: '', stderr: '', exitCode: null, signal: 'SIGKILL' } as never),
    ).toBe('exit status SIGKILL');
    expect(
      commandFailure({ stdout: '', stderr: 'x'.repeat(2000), exitCode: 1 } as never),
    ).toHaveLength(1200);
  });
});

describe('chunks', () => {
  it('cuts a list in runs of at most size, in order', () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunks([], 3)).toEqual([]);
  });
});
