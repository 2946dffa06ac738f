import { describe, expect, it } from 'vitest';
import { until } from './until.js';

describe('until', () => {
  it('resolves as soon as the condition holds, sync or async', async () => {
    let calls = 0;
    await until(() => ++calls === 3, 5_000, 'the third call', 1);
    expect(calls).toBe(3);
    await until(async () => true, 0, 'an async condition');
  });

  it('throws after the timeout, naming what it waited for', async () => {
    const started = Date.now();
    await expect(until(() => false, 100, 'a condition that never holds')).rejects.toThrow(
      'Timed out after 100 ms waiting for a condition that never holds',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  });

  it('fails with the error a condition throws', async () => {
    await expect(
      until(
        () => {
          throw new Error('broken');
        },
        1_000,
        'x',
      ),
    ).rejects.toThrow('broken');
  });
});
